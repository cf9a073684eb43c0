/*===- census_c_api.c - census_canned's export, run from C ---------------===*
 *
 *   census_c_api WORK_DIR EXPORT_DIR
 *
 * A C program built against the installed C API through pkg-config
 * (`pkg-config --cflags --libs estc-c`): loads census_canned's export
 * EXPORT_DIR, runs its "raw:predict" signature on the rows of WORK_DIR/served.csv, and checks
 * the probabilities against WORK_DIR/expected_predictions.txt. Exit 0 when
 * they agree.
 *
 *===----------------------------------------------------------------------===*/

#include "estc/c_api.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_ROWS 64

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: census_c_api WORK_DIR EXPORT_DIR\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/served.csv", argv[1]);
  FILE *csv = fopen(path, "r");
  if (!csv) {
    fprintf(stderr, "census_c_api: cannot open %s\n", path);
    return 1;
  }
  float age[MAX_ROWS], hours[MAX_ROWS];
  char education[MAX_ROWS][32], occupation[MAX_ROWS][32], income[8];
  const char *educations[MAX_ROWS], *occupations[MAX_ROWS];
  size_t education_lengths[MAX_ROWS], occupation_lengths[MAX_ROWS];
  char header[128];
  int64_t n = 0;
  if (!fgets(header, sizeof header, csv)) {
    fprintf(stderr, "census_c_api: %s is empty\n", path);
    return 1;
  }
  while (n < MAX_ROWS &&
         fscanf(csv, "%f,%31[^,],%31[^,],%f,%7s", &age[n], education[n],
                occupation[n], &hours[n], income) == 5) {
    educations[n] = education[n];
    occupations[n] = occupation[n];
    education_lengths[n] = strlen(education[n]);
    occupation_lengths[n] = strlen(occupation[n]);
    ++n;
  }
  fclose(csv);

  char *error = NULL;
  EstcSavedModel *model = estc_saved_model_load(argv[2], &error);
  if (!model) {
    fprintf(stderr, "census_c_api: %s\n", error);
    estc_free(error);
    return 1;
  }
  int64_t shape[2] = {n, 1};
  EstcTensor *in[4] = {
      estc_tensor_new(ESTC_FLOAT32, shape, 2, age, (size_t)n * sizeof(float)),
      estc_tensor_new_strings(shape, 2, educations, education_lengths),
      estc_tensor_new_strings(shape, 2, occupations, occupation_lengths),
      estc_tensor_new(ESTC_FLOAT32, shape, 2, hours,
                      (size_t)n * sizeof(float))};
  const char *in_names[4] = {"age", "education", "occupation", "hours"};
  const char *out_names[1] = {"probabilities"};
  EstcTensor *out[1];
  if (estc_saved_model_run(model, "raw:predict", in_names, in, 4, out_names,
                           out, 1, &error) != ESTC_OK) {
    fprintf(stderr, "census_c_api: %s\n", error);
    estc_free(error);
    return 1;
  }
  const float *p = estc_tensor_data(out[0]);

  snprintf(path, sizeof path, "%s/expected_predictions.txt", argv[1]);
  FILE *expected = fopen(path, "r");
  if (!expected) {
    fprintf(stderr, "census_c_api: cannot open %s\n", path);
    return 1;
  }
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double want;
    char cls[16];
    if (fscanf(expected, "%lf %15s", &want, cls) != 2) {
      fprintf(stderr, "census_c_api: %s has fewer than %lld rows\n", path,
              (long long)n);
      return 1;
    }
    if (fabs(p[2 * i + 1] - want) > 1e-6) {
      printf("row %lld: %.9g from C, the Estimator predicted %.9g\n",
             (long long)i, p[2 * i + 1], want);
      ++bad;
    }
  }
  fclose(expected);
  printf("census_c_api: %lld rows, %d disagreements\n", (long long)n, bad);
  estc_tensor_free(out[0]);
  for (int i = 0; i < 4; ++i)
    estc_tensor_free(in[i]);
  estc_saved_model_free(model);
  return bad == 0 && n > 0 ? 0 : 1;
}
