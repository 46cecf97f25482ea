/* A C99 program built against the installed package with
     cc -std=c99 -Wall -Wextra -pedantic -Werror $(pkg-config --cflags --libs zt)
   It opens the conformance file valid/dense_f32_basic.zt, checks what the
   corpus says about it, and prints one line. Exit status 0 only if all holds. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <ztensor.h>

static int fail(const char* what, zt_status s) {
  fprintf(stderr, "consumer: %s: %s: %s\n", what, zt_status_name(s), zt_last_error());
  return 1;
}

int main(int argc, char** argv) {
  zt_reader* r = NULL;
  zt_status s;
  size_t bias = 0, ndim = 0;
  const uint64_t* shape;
  const void* data = NULL;
  uint64_t nbytes = 0, checked = 99, unchecked = 99;
  float values[3];

  if (argc != 2) {
    fprintf(stderr, "usage: %s dense_f32_basic.zt\n", argv[0]);
    return 2;
  }
  if (zt_version_number() / 10000 != ZT_VERSION_MAJOR) {
    fprintf(stderr, "consumer: header major %d, library %s\n", ZT_VERSION_MAJOR, zt_version());
    return 1;
  }
#ifdef ZT_PC_VERSION
  /* Built against the install's own header (build_and_run.sh): zt.pc, the
     header's macros and the library must say one version. A program built
     against an older header (abi/check_old_header.sh) only shares the major. */
  {
    char header[32];
    sprintf(header, "%d.%d.%d", ZT_VERSION_MAJOR, ZT_VERSION_MINOR, ZT_VERSION_PATCH);
    if (strcmp(header, zt_version()) != 0 || strcmp(ZT_PC_VERSION, zt_version()) != 0) {
      fprintf(stderr, "consumer: header %s, zt.pc %s, library %s\n", header, ZT_PC_VERSION, zt_version());
      return 1;
    }
  }
#endif
  s = zt_open(argv[1], &r);
  if (s != ZT_OK) return fail("zt_open", s);
  if (strcmp(zt_file_version(r), "1.2.0") != 0 || zt_object_count(r) != 2) {
    fprintf(stderr, "consumer: version %s with %zu objects, expected 1.2.0 with 2\n",
            zt_file_version(r), zt_object_count(r));
    zt_close(r);
    return 1;
  }
  s = zt_object_find(r, "layer1.bias", &bias);
  if (s != ZT_OK) return fail("zt_object_find", s);
  shape = zt_object_shape(r, bias, &ndim);
  s = zt_component_map(r, bias, "data", &data, &nbytes);
  if (s != ZT_OK) return fail("zt_component_map", s);
  if (ndim != 1 || shape[0] != 3 || nbytes != sizeof values ||
      strcmp(zt_object_format(r, bias), "dense") != 0 ||
      strcmp(zt_component_dtype(r, bias, "data"), "f32") != 0) {
    fprintf(stderr, "consumer: layer1.bias is not a dense f32 [3] of 12 bytes\n");
    zt_close(r);
    return 1;
  }
  memcpy(values, data, sizeof values);
  /* The corpus stores 0.5671601295..., -1.5682452917..., -1.2391905784... */
  if (fabs(values[0] - 0.5671601) > 1e-6 || fabs(values[1] + 1.5682453) > 1e-6 ||
      fabs(values[2] + 1.2391906) > 1e-6) {
    fprintf(stderr, "consumer: unexpected values %f %f %f\n", values[0], values[1], values[2]);
    zt_close(r);
    return 1;
  }
  s = zt_verify(r, &checked, &unchecked);
  if (s != ZT_OK) return fail("zt_verify", s);
  if (checked != 0 || unchecked != 2) {
    fprintf(stderr, "consumer: verify counted %llu checked, %llu unchecked; expected 0 and 2\n",
            (unsigned long long)checked, (unsigned long long)unchecked);
    zt_close(r);
    return 1;
  }
  printf("consumer (C99) with libztensor %s: %s, layer1.bias = [%.6f, %.6f, %.6f], verify ok\n",
         zt_version(), argv[1], values[0], values[1], values[2]);
  zt_close(r);
  return 0;
}
