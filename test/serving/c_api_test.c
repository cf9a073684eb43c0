/*===- c_api_test.c - The C API, from C --------------------------------===*
 *
 *   c_api_test TINY_EXPORT LINEAR_EXPORT
 *
 * Loads the two exports of make_test_exports through tools/estc-serve/
 * c_api.h, lists signatures, runs them and checks what a C caller sees:
 * shapes, dtypes, probabilities that sum to 1 with the class at their
 * argmax, class name strings, and each error status with its message.
 * Exits non-zero on the first failed check, naming it.
 *
 *===----------------------------------------------------------------------===*/
#include "runtime/serving/c_api.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "c_api_test:%d: check failed: %s\n", __LINE__, #cond);   \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static void tiny(const char *dir) {
  char *error = NULL;
  EstcSavedModel *m = estc_saved_model_load(dir, &error);
  CHECK(m != NULL);
  if (!m) {
    fprintf(stderr, "%s\n", error ? error : "(no message)");
    estc_free(error);
    return;
  }
  CHECK(estc_saved_model_global_step(m) == 30);
  CHECK(estc_saved_model_num_signatures(m) == 1);
  CHECK(strcmp(estc_saved_model_signature_name(m, 0), "serving_default") == 0);
  CHECK(strcmp(estc_signature_method_name(m, "serving_default"),
               "tensorflow/serving/predict") == 0);
  CHECK(estc_signature_num_tensors(m, "serving_default", 0) == 1);
  CHECK(estc_signature_num_tensors(m, "serving_default", 1) == 2);
  CHECK(estc_signature_num_tensors(m, "nope", 0) == -1);
  EstcDType dtype;
  int rank;
  const int64_t *shape;
  const char *alias =
      estc_signature_tensor(m, "serving_default", 0, 0, &dtype, &rank, &shape);
  CHECK(alias && strcmp(alias, "x") == 0);
  CHECK(dtype == ESTC_FLOAT32 && rank == 2 && shape[0] == -1 && shape[1] == 4);
  CHECK(estc_signature_tensor(m, "serving_default", 1, 2, NULL, NULL, NULL) ==
        NULL);

  int64_t xshape[2] = {3, 4};
  float x[12] = {1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  EstcTensor *in = estc_tensor_new(ESTC_FLOAT32, xshape, 2, x, sizeof x);
  CHECK(in != NULL);
  CHECK(estc_tensor_new(ESTC_FLOAT32, xshape, 2, x, 7) == NULL);
  const char *in_names[] = {"x"};
  const char *out_names[] = {"probabilities", "classes"};
  EstcTensor *out[2];
  EstcStatus s = estc_saved_model_run(m, "serving_default", in_names, &in, 1,
                                      out_names, out, 2, &error);
  CHECK(s == ESTC_OK);
  if (s == ESTC_OK) {
    CHECK(estc_tensor_dtype(out[0]) == ESTC_FLOAT32);
    CHECK(estc_tensor_rank(out[0]) == 2);
    CHECK(estc_tensor_shape(out[0])[0] == 3 &&
          estc_tensor_shape(out[0])[1] == 3);
    CHECK(estc_tensor_dtype(out[1]) == ESTC_INT64);
    const float *p = estc_tensor_data(out[0]);
    const int64_t *c = estc_tensor_data(out[1]);
    for (int r = 0; r < 3; ++r) {
      float sum = p[3 * r] + p[3 * r + 1] + p[3 * r + 2];
      int best = 0;
      for (int k = 1; k < 3; ++k)
        if (p[3 * r + k] > p[3 * r + best])
          best = k;
      CHECK(fabsf(sum - 1.0f) < 1e-5f);
      CHECK(c[r] == best);
    }
    estc_tensor_free(out[0]);
    estc_tensor_free(out[1]);
  }
  /* Errors: status, message, outputs left NULL. */
  s = estc_saved_model_run(m, "nope", in_names, &in, 1, out_names, out, 1,
                           &error);
  CHECK(s == ESTC_INVALID_ARGUMENT);
  CHECK(error && strstr(error, "\"nope\" not found") != NULL);
  CHECK(out[0] == NULL);
  estc_free(error);
  const char *bad_out[] = {"logits"};
  s = estc_saved_model_run(m, "serving_default", in_names, &in, 1, bad_out, out,
                           1, &error);
  CHECK(s == ESTC_INVALID_ARGUMENT);
  estc_free(error);
  estc_tensor_free(in);
  estc_saved_model_free(m);

  m = estc_saved_model_load("/nonexistent/export", &error);
  CHECK(m == NULL);
  CHECK(error && strncmp(error, "SavedModel /nonexistent/export: ", 32) == 0);
  estc_free(error);
}

static void linear(const char *dir) {
  char *error = NULL;
  EstcSavedModel *m = estc_saved_model_load(dir, &error);
  CHECK(m != NULL);
  if (!m) {
    estc_free(error);
    return;
  }
  CHECK(estc_saved_model_num_signatures(m) == 5);
  /* The raw alternative: numbers and strings as a C caller has them. */
  int64_t col[2] = {2, 1};
  float x1[2] = {1.0f, -1.0f}, x2[2] = {0.5f, -0.5f};
  const char *colors[2] = {"red", "blue"};
  size_t lengths[2] = {3, 4};
  EstcTensor *in[3] = {estc_tensor_new(ESTC_FLOAT32, col, 2, x1, sizeof x1),
                       estc_tensor_new(ESTC_FLOAT32, col, 2, x2, sizeof x2),
                       estc_tensor_new_strings(col, 2, colors, lengths)};
  CHECK(in[0] && in[1] && in[2]);
  const char *in_names[] = {"x1", "x2", "color"};
  const char *out_names[] = {"classes", "all_classes", "probabilities"};
  EstcTensor *out[3];
  EstcStatus s = estc_saved_model_run(m, "raw:predict", in_names, in, 3,
                                      out_names, out, 3, &error);
  CHECK(s == ESTC_OK);
  if (s == ESTC_OK) {
    size_t n = 0;
    CHECK(estc_tensor_dtype(out[0]) == ESTC_STRING);
    CHECK(estc_tensor_data(out[0]) == NULL);
    const float *p = estc_tensor_data(out[2]);
    for (int r = 0; r < 2; ++r) {
      const char *c = estc_tensor_string(out[0], r, &n);
      const char *want = p[2 * r + 1] > p[2 * r] ? "yes" : "no";
      CHECK(c && n == strlen(want) && memcmp(c, want, n) == 0);
    }
    const char *no = estc_tensor_string(out[1], 0, &n);
    CHECK(no && n == 2 && memcmp(no, "no", 2) == 0);
    CHECK(estc_tensor_string(out[1], 4, &n) == NULL);
    for (int i = 0; i < 3; ++i)
      estc_tensor_free(out[i]);
  }
  /* A string where a number goes: an invalid argument. */
  in_names[0] = "color";
  in_names[2] = "x1";
  s = estc_saved_model_run(m, "raw:predict", in_names, in, 3, out_names, out, 1,
                           &error);
  CHECK(s == ESTC_INVALID_ARGUMENT);
  CHECK(error && strstr(error, "must be") != NULL);
  estc_free(error);
  for (int i = 0; i < 3; ++i)
    estc_tensor_free(in[i]);
  estc_saved_model_free(m);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: c_api_test TINY_EXPORT LINEAR_EXPORT\n");
    return 2;
  }
  tiny(argv[1]);
  linear(argv[2]);
  if (failures)
    fprintf(stderr, "c_api_test: %d checks failed\n", failures);
  else
    printf("c_api_test: all checks passed\n");
  return failures ? 1 : 0;
}
