//===- estc/data.h - tf.data for C++: datasets, readers, tf.Example -------===//
//
// The input pipeline (docs/input-pipeline.md): sources, transformations and
// iterators; CSV, TFRecord, text and IDX files, plain or compressed
// (data::Compression); tf.train.Example and SequenceExample; host tensors
// (TensorValue).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_PUBLIC_DATA_H
#define ESTC_PUBLIC_DATA_H

#include "lib/Data/Csv.h"
#include "lib/Data/Dataset.h"
#include "lib/Data/Example.h"
#include "lib/Data/Idx.h"
#include "lib/Data/Image.h"
#include "lib/Data/InputStream.h"
#include "lib/Data/Readers.h"
#include "lib/Data/SequenceExample.h"
#include "lib/Data/TFRecord.h"
#include "lib/Data/TextLine.h"
#include "lib/Data/Value.h"
#include "lib/Data/Vocabulary.h"
#include "lib/Tensor/TensorValue.h"

#endif // ESTC_PUBLIC_DATA_H
