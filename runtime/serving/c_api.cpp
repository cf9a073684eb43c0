//===- c_api.cpp - The C API over serving::SavedModel -------------------===//

#include "runtime/serving/c_api.h"

#include "lib/Data/Idx.h"
#include "runtime/CompiledModel.h"
#include "runtime/serving/SavedModel.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

using estc::DType;
using estc::TensorValue;
namespace serving = estc::serving;

struct EstcSavedModel {
  std::shared_ptr<const serving::SavedModel> model;
  std::vector<std::string> names; // signature names, sorted
};

struct EstcTensor {
  TensorValue value;
};

namespace {

void setError(char **error, const std::string &message) {
  if (!error)
    return;
  *error = static_cast<char *>(std::malloc(message.size() + 1));
  if (*error)
    std::memcpy(*error, message.c_str(), message.size() + 1);
}

const serving::SignatureDef *findSignature(const EstcSavedModel *model,
                                           const char *name) {
  if (!model || !name)
    return nullptr;
  auto it = model->model->signatures().find(name);
  return it == model->model->signatures().end() ? nullptr : &it->second;
}

bool validDType(int d) {
  return d == ESTC_FLOAT32 || d == ESTC_FLOAT64 || d == ESTC_INT32 ||
         d == ESTC_INT64 || d == ESTC_BOOL || d == ESTC_STRING;
}

/// Elements of `shape`, or -1 for a bad shape.
int64_t elementsOf(const int64_t *shape, int rank) {
  if (rank < 0 || rank > 16 || (rank > 0 && !shape))
    return -1;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) {
    if (shape[i] < 0 || (shape[i] > 0 && n > (int64_t(1) << 40) / shape[i]))
      return -1;
    n *= shape[i];
  }
  return n;
}

} // namespace

extern "C" {

void estc_free(void *p) { std::free(p); }

EstcSavedModel *estc_saved_model_load(const char *export_dir, char **error) {
  if (error)
    *error = nullptr;
  if (!export_dir) {
    setError(error, "estc_saved_model_load: export_dir is NULL");
    return nullptr;
  }
  try {
    auto out = std::make_unique<EstcSavedModel>();
    out->model = serving::SavedModel::load(export_dir);
    for (const auto &[name, sig] : out->model->signatures())
      out->names.push_back(name);
    return out.release();
  } catch (const std::exception &e) {
    setError(error, e.what());
    return nullptr;
  }
}

void estc_saved_model_free(EstcSavedModel *model) { delete model; }

int64_t estc_saved_model_global_step(const EstcSavedModel *model) {
  return model ? model->model->global_step() : -1;
}

int estc_saved_model_num_signatures(const EstcSavedModel *model) {
  return model ? static_cast<int>(model->names.size()) : 0;
}

const char *estc_saved_model_signature_name(const EstcSavedModel *model,
                                            int index) {
  if (!model || index < 0 || index >= static_cast<int>(model->names.size()))
    return nullptr;
  return model->names[static_cast<size_t>(index)].c_str();
}

const char *estc_signature_method_name(const EstcSavedModel *model,
                                       const char *signature) {
  const serving::SignatureDef *sig = findSignature(model, signature);
  return sig ? sig->method_name.c_str() : nullptr;
}

int estc_signature_num_tensors(const EstcSavedModel *model,
                               const char *signature, int is_output) {
  const serving::SignatureDef *sig = findSignature(model, signature);
  if (!sig)
    return -1;
  return static_cast<int>(is_output ? sig->outputs.size() : sig->inputs.size());
}

const char *estc_signature_tensor(const EstcSavedModel *model,
                                  const char *signature, int is_output,
                                  int index, EstcDType *dtype, int *rank,
                                  const int64_t **shape) {
  const serving::SignatureDef *sig = findSignature(model, signature);
  if (!sig || index < 0)
    return nullptr;
  const auto &tensors = is_output ? sig->outputs : sig->inputs;
  if (index >= static_cast<int>(tensors.size()))
    return nullptr;
  auto it = std::next(tensors.begin(), index);
  if (dtype)
    *dtype = static_cast<EstcDType>(it->second.dtype);
  if (rank)
    *rank = static_cast<int>(it->second.shape.size());
  if (shape)
    *shape = it->second.shape.data();
  return it->first.c_str();
}

EstcStatus
estc_saved_model_run(const EstcSavedModel *model, const char *signature,
                     const char *const *input_names, EstcTensor *const *inputs,
                     int num_inputs, const char *const *output_names,
                     EstcTensor **outputs, int num_outputs, char **error) {
  if (error)
    *error = nullptr;
  for (int i = 0; outputs && i < num_outputs; ++i)
    outputs[i] = nullptr;
  if (!model || !signature || num_inputs < 0 || num_outputs < 0 ||
      (num_inputs > 0 && (!input_names || !inputs)) ||
      (num_outputs > 0 && (!output_names || !outputs))) {
    setError(error, "estc_saved_model_run: a NULL or negative argument");
    return ESTC_INVALID_ARGUMENT;
  }
  try {
    serving::TensorMap in;
    for (int i = 0; i < num_inputs; ++i) {
      if (!input_names[i] || !inputs[i])
        throw std::invalid_argument("estc_saved_model_run: input " +
                                    std::to_string(i) + " is NULL");
      in[input_names[i]] = inputs[i]->value;
    }
    std::vector<std::string> wanted;
    for (int i = 0; i < num_outputs; ++i) {
      if (!output_names[i])
        throw std::invalid_argument("estc_saved_model_run: output name " +
                                    std::to_string(i) + " is NULL");
      wanted.push_back(output_names[i]);
    }
    serving::TensorMap out = model->model->run(signature, in, wanted);
    for (int i = 0; i < num_outputs; ++i)
      outputs[i] = new EstcTensor{std::move(out.at(wanted[i]))};
    return ESTC_OK;
  } catch (const estc::data::DataError &e) {
    setError(error, e.what());
    return ESTC_DATA_ERROR;
  } catch (const estc::rt::InvalidArgumentError &e) {
    setError(error, e.what());
    return ESTC_DATA_ERROR;
  } catch (const std::invalid_argument &e) {
    setError(error, e.what());
    return ESTC_INVALID_ARGUMENT;
  } catch (const std::exception &e) {
    setError(error, e.what());
    return ESTC_INTERNAL;
  }
}

EstcTensor *estc_tensor_new(EstcDType dtype, const int64_t *shape, int rank,
                            const void *data, size_t bytes) {
  int64_t n = elementsOf(shape, rank);
  if (n < 0 || !validDType(dtype) || dtype == ESTC_STRING ||
      (bytes > 0 && !data))
    return nullptr;
  try {
    std::vector<int64_t> dims(shape, shape + rank);
    std::string raw(static_cast<const char *>(data),
                    static_cast<const char *>(data) + (data ? bytes : 0));
    return new EstcTensor{TensorValue::from_bytes(
        static_cast<DType>(dtype), std::move(dims), std::move(raw))};
  } catch (const std::exception &) {
    return nullptr;
  }
}

EstcTensor *estc_tensor_new_strings(const int64_t *shape, int rank,
                                    const char *const *strings,
                                    const size_t *lengths) {
  int64_t n = elementsOf(shape, rank);
  if (n < 0 || (n > 0 && (!strings || !lengths)))
    return nullptr;
  std::vector<std::string> values;
  for (int64_t i = 0; i < n; ++i) {
    if (!strings[i] && lengths[i] > 0)
      return nullptr;
    values.emplace_back(strings[i] ? strings[i] : "", lengths[i]);
  }
  return new EstcTensor{TensorValue::of_strings(
      std::vector<int64_t>(shape, shape + rank), std::move(values))};
}

void estc_tensor_free(EstcTensor *tensor) { delete tensor; }

EstcDType estc_tensor_dtype(const EstcTensor *t) {
  return static_cast<EstcDType>(t->value.dtype);
}
int estc_tensor_rank(const EstcTensor *t) {
  return static_cast<int>(t->value.shape.size());
}
const int64_t *estc_tensor_shape(const EstcTensor *t) {
  return t->value.shape.data();
}
int64_t estc_tensor_num_elements(const EstcTensor *t) {
  return t->value.num_elements();
}
const void *estc_tensor_data(const EstcTensor *t) {
  return t->value.dtype == DType::String ? nullptr : t->value.data.data();
}
size_t estc_tensor_bytes(const EstcTensor *t) { return t->value.data.size(); }
const char *estc_tensor_string(const EstcTensor *t, int64_t index,
                               size_t *length) {
  if (t->value.dtype != DType::String || index < 0 ||
      index >= static_cast<int64_t>(t->value.strings.size()))
    return nullptr;
  const std::string &s = t->value.strings[static_cast<size_t>(index)];
  if (length)
    *length = s.size();
  return s.data();
}

} // extern "C"
