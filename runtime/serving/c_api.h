/*===- c_api.h - The C API of an exported estc model ----------------------===*
 *
 * serving::SavedModel (SavedModel.h) for C and for other languages' foreign
 * function interfaces (Python ctypes, Go cgo, Rust, Java FFM): load an
 * export folder, list its signatures, run one. No LLVM; link
 * EstcSavedModel (and the runtime, libEstcRuntime.so).
 *
 *   char *error = NULL;
 *   EstcSavedModel *m = estc_saved_model_load("/models/iris/1", &error);
 *   if (!m) { fprintf(stderr, "%s\n", error); estc_free(error); return 1; }
 *   int64_t shape[2] = {1, 4};
 *   float x[4] = {5.1f, 3.5f, 1.4f, 0.2f};
 *   EstcTensor *in = estc_tensor_new(ESTC_FLOAT32, shape, 2, x, sizeof x);
 *   const char *in_names[] = {"x"}, *out_names[] = {"probabilities"};
 *   EstcTensor *out[1];
 *   if (estc_saved_model_run(m, "serving_default", in_names, &in, 1,
 *                            out_names, out, 1, &error) != ESTC_OK) ...
 *   const float *p = estc_tensor_data(out[0]);
 *   estc_tensor_free(out[0]); estc_tensor_free(in);
 *   estc_saved_model_free(m);
 *
 * Every function that can fail returns a status (or NULL) and, when `error`
 * is not NULL, a one-line message the caller frees with estc_free. A model
 * is safe to run from several threads at once.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ESTC_ESTIMATOR_SERVING_C_API_H
#define ESTC_ESTIMATOR_SERVING_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types: lib/Tensor's DType numbers (graph.proto's). */
typedef enum EstcDType {
  ESTC_FLOAT32 = 1,
  ESTC_FLOAT64 = 2,
  ESTC_INT32 = 3,
  ESTC_INT64 = 4,
  ESTC_BOOL = 5, /* one byte, 0 or 1 */
  ESTC_STRING = 8
} EstcDType;

typedef enum EstcStatus {
  ESTC_OK = 0,
  ESTC_INVALID_ARGUMENT = 1, /* a bad request: name, dtype, shape */
  ESTC_DATA_ERROR = 2,       /* bad data: a malformed tf.Example, an id */
  ESTC_LOAD_ERROR = 3,       /* not a valid, loadable export folder */
  ESTC_INTERNAL = 4
} EstcStatus;

typedef struct EstcSavedModel EstcSavedModel;
typedef struct EstcTensor EstcTensor;

/* Frees a message (or anything else) this API allocated for the caller. */
void estc_free(void *p);

/* --- Models ------------------------------------------------------------- */
EstcSavedModel *estc_saved_model_load(const char *export_dir, char **error);
void estc_saved_model_free(EstcSavedModel *model);
int64_t estc_saved_model_global_step(const EstcSavedModel *model);

/* Signatures, sorted by name; names live as long as the model. */
int estc_saved_model_num_signatures(const EstcSavedModel *model);
const char *estc_saved_model_signature_name(const EstcSavedModel *model,
                                            int index);
/* The signature's method name ("tensorflow/serving/predict", ...), or NULL
 * for an unknown signature. */
const char *estc_signature_method_name(const EstcSavedModel *model,
                                       const char *signature);
/* Inputs (is_output = 0) or outputs (1) of a signature, by alias sorted;
 * -1 for an unknown signature. */
int estc_signature_num_tensors(const EstcSavedModel *model,
                               const char *signature, int is_output);
/* The alias, dtype and shape (-1: the batch) of tensor `index`; returns
 * NULL (and leaves the rest) for a bad signature or index. `shape` holds
 * `*rank` dimensions, valid as long as the model. */
const char *estc_signature_tensor(const EstcSavedModel *model,
                                  const char *signature, int is_output,
                                  int index, EstcDType *dtype, int *rank,
                                  const int64_t **shape);

/* Runs `signature` on `num_inputs` tensors named by input alias and stores
 * the `num_outputs` outputs named in `output_names` in `outputs` (new
 * tensors the caller frees; all NULL on failure). */
EstcStatus
estc_saved_model_run(const EstcSavedModel *model, const char *signature,
                     const char *const *input_names, EstcTensor *const *inputs,
                     int num_inputs, const char *const *output_names,
                     EstcTensor **outputs, int num_outputs, char **error);

/* --- Tensors ------------------------------------------------------------ */
/* A numeric tensor: `bytes` must be the element size times the elements
 * (little-endian, row-major); NULL otherwise, or for a bad dtype or shape. */
EstcTensor *estc_tensor_new(EstcDType dtype, const int64_t *shape, int rank,
                            const void *data, size_t bytes);
/* A string tensor of `strings[i]` of `lengths[i]` bytes (any bytes). */
EstcTensor *estc_tensor_new_strings(const int64_t *shape, int rank,
                                    const char *const *strings,
                                    const size_t *lengths);
void estc_tensor_free(EstcTensor *tensor);
EstcDType estc_tensor_dtype(const EstcTensor *tensor);
int estc_tensor_rank(const EstcTensor *tensor);
const int64_t *estc_tensor_shape(const EstcTensor *tensor);
int64_t estc_tensor_num_elements(const EstcTensor *tensor);
/* A numeric tensor's bytes (NULL for strings). */
const void *estc_tensor_data(const EstcTensor *tensor);
size_t estc_tensor_bytes(const EstcTensor *tensor);
/* Element `index` of a string tensor and its length (NULL otherwise). */
const char *estc_tensor_string(const EstcTensor *tensor, int64_t index,
                               size_t *length);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ESTC_ESTIMATOR_SERVING_C_API_H */
