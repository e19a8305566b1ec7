/* test_output.c — suite unit: the output helpers the programs
 * share: rows held for a whole table (cli/csv.h hl_csv_rows, from a column table), numbers as
 * text (cli/cli.h hl_format_thousands, core/base/mem.h hl_format_bytes), the CRC-32 of
 * halflab's own files (core/base/crc32.h), their all-or-nothing writing
 * (core/base/atomic_file.h) and the results folder's machine name
 * (core/base/device.h hl_device_slug_of). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/base/atomic_file.h"
#include "cli/cli.h"
#include "core/base/crc32.h"
#include "core/base/device.h"
#include "cli/csv.h"
#include "tests/support/hltest.h"

static void test_numbers_as_text(void **state) {
  (void)state;
  static const struct {
    uint64_t v;
    const char *thousands, *bytes;
  } cases[] = {
      {0, "0", "0 B"},
      {512, "512", "512 B"},
      {1000, "1,000", "1000 B"},
      {1536, "1,536", "1.50 KiB"},
      {124439808, "124,439,808", "118.68 MiB"},
      {UINT64_MAX, "18,446,744,073,709,551,615", "16777216.00 TiB"},
  };
  char b[32];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assert_string_equal(hl_format_thousands(cases[i].v, b, sizeof b), cases[i].thousands);
    assert_string_equal(hl_format_bytes(cases[i].v, b, sizeof b), cases[i].bytes);
  }
  /* a short buffer: cut, never overrun */
  char s[6] = "xxxxx";
  hl_format_thousands(1234567, s, sizeof s);
  assert_true(strlen(s) < sizeof s);
  assert_memory_equal(s, "1,23", 4);
}

static const hl_column rows_columns[] = {
    {"i", "1", HL_COL_INT, NULL, "the row's number", "tests: test_rows"},
    {"kind", "", HL_COL_TEXT, NULL, "odd or even", "tests: test_rows"},
};
static const hl_schema rows_schema = {"rows.csv", "test", "tests: test_rows", "One row per number.",
                                      HL_SCHEMA_COLUMNS(rows_columns)};

static void test_rows(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), err[512];
  hl_csv_rows r = {0};
  for (int i = 0; i < 100; i++) { /* grows past 64 */
    hl_row row;
    hl_row_begin(&row, &rows_schema);
    hl_row_int(&row, "i", i);
    hl_row_text(&row, "kind", i % 2 ? "odd" : "even");
    hl_csv_rows_put(&r, &row);
  }
  assert_int_equal(r.n, 100);
  assert_true(hl_csv_rows_write_schema(&r, dir, NULL, &rows_schema, err, sizeof err));
  assert_true(hl_csv_rows_write_schema(&r, dir, "renamed.csv", &rows_schema, err, sizeof err));
  hl_table *t = hl_table_read(hl_path(dir, "rows.csv"));
  assert_non_null(t);
  assert_int_equal(t->nrows, 100);
  assert_string_equal(hl_table_get(t, 99, "i"), "99");
  assert_string_equal(hl_table_get(t, 99, "kind"), "odd");
  assert_non_null(strstr(t->meta, "# units: i=1\n"));
  hl_table_free(t);
  assert_true(hl_file_exists(hl_path(dir, "renamed.csv")));
  assert_false(hl_file_exists(hl_path(dir, "rows.csv.tmp")));
  /* a folder that does not exist: false, the message names the file, nothing written */
  assert_false(hl_csv_rows_write_schema(&r, hl_path(dir, "missing"), NULL, &rows_schema, err, sizeof err));
  assert_non_null(strstr(err, "missing/rows.csv"));
  assert_int_equal(hl_count_files(dir), 2);
  hl_csv_rows_free(&r);
  assert_int_equal(r.n, 0);
  assert_null(r.rows);
  /* no rows: the header alone */
  assert_true(hl_csv_rows_write_schema(&r, dir, "empty.csv", &rows_schema, err, sizeof err));
  t = hl_table_read(hl_path(dir, "empty.csv"));
  assert_non_null(t);
  assert_int_equal(t->nrows, 0);
  assert_int_equal(t->ncols, 2);
  hl_table_free(t);
  /* a row that could not be kept fails the write, before any file */
  r.failed = true;
  assert_false(hl_csv_rows_write_schema(&r, dir, "lost.csv", &rows_schema, err, sizeof err));
  assert_non_null(strstr(err, "out of memory"));
  assert_false(hl_file_exists(hl_path(dir, "lost.csv")));
  hl_csv_rows_free(&r);
  hl_rmtree(dir);
  free(dir);
}

static void test_crc32(void **state) {
  (void)state;
  assert_int_equal(hl_crc32_update(0, "123456789", 9), 0xCBF43926u); /* zlib's check value */
  assert_int_equal(hl_crc32_update(0, "", 0), 0);
  unsigned char data[1000];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 131 + 7);
  const uint32_t whole = hl_crc32_update(0, data, sizeof data);
  assert_int_equal(whole, hl_test_crc32(data, sizeof data)); /* the bitwise reference */
  assert_int_equal(hl_crc32_update(hl_crc32_update(0, data, 333), data + 333, sizeof data - 333), whole);
}

static void test_atomic_file(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  const char *path = hl_path(dir, "f.bin");
  hl_write_file(path, "old", 3);
  hl_atomic_file a;
  /* given up: the old file stays, no .tmp is left */
  assert_true(hl_atomic_open(&a, path));
  fputs("new, never finished", a.f);
  hl_atomic_discard(&a);
  size_t n;
  char *got = hl_read_file(path, &n);
  assert_int_equal(n, 3);
  assert_memory_equal(got, "old", 3);
  free(got);
  assert_int_equal(hl_count_files(dir), 1);
  /* committed: the new contents replace the old whole */
  assert_true(hl_atomic_open(&a, path));
  fputs("new", a.f);
  fputs(" contents", a.f);
  assert_true(hl_atomic_commit(&a));
  got = hl_read_file(path, &n);
  assert_int_equal(n, 12);
  assert_memory_equal(got, "new contents", 12);
  free(got);
  assert_int_equal(hl_count_files(dir), 1);
  /* a rename that cannot happen (a folder is in the way): refused, named, nothing left */
  const char *folder = hl_path(dir, "sub");
  assert_int_equal(mkdir(folder, 0755), 0);
  hl_write_file(hl_path(folder, "x"), "x", 1);
  assert_true(hl_atomic_open(&a, folder));
  fputs("data", a.f);
  assert_false(hl_atomic_commit(&a));
  assert_string_equal(a.call, "rename");
  assert_int_equal(hl_count_files(dir), 2); /* f.bin and sub: no sub.tmp */
  /* a folder that does not exist: open refused */
  assert_false(hl_atomic_open(&a, hl_path(dir, "no/such/f")));
  assert_string_equal(a.call, "open");
  hl_rmtree(dir);
  free(dir);
}

/* results/<machine>/: vendor marks, filler and clock dropped; a name without
 * a digit gains the family and model, so a VM's "AMD EPYC" on Zen 4 and on
 * Zen 5 are two folders; this machine's own name follows the same rule */
static void test_machine_names(void **state) {
  (void)state;
  static const struct {
    hl_device_kind kind;
    const char *name, *model_id, *slug;
  } cases[] = {
      {HL_DEVICE_CPU, "AMD EPYC", "family 26 model 2", "cpu-amd-epyc-family-26-model-2"},
      {HL_DEVICE_CPU, "AMD EPYC", "family 25 model 17", "cpu-amd-epyc-family-25-model-17"},
      {HL_DEVICE_CPU, "AMD EPYC", "", "cpu-amd-epyc"},
      {HL_DEVICE_CPU, "AMD EPYC 9654 96-Core Processor", "family 25 model 17", "cpu-amd-epyc-9654-96-core"},
      {HL_DEVICE_CPU, "Intel(R) Xeon(R) Platinum 8480+", "family 6 model 143", "cpu-intel-xeon-platinum-8480"},
      {HL_DEVICE_CPU, "Intel(R) Xeon(R) Processor @ 2.10GHz", "family 6 model 207",
       "cpu-intel-xeon-family-6-model-207"},
      {HL_DEVICE_CPU, "", "", "cpu-unknown"},
      {HL_DEVICE_CUDA, "NVIDIA H200", "", "nvidia-h200"},
  };
  char s[128];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    hl_device_slug_of(cases[i].kind, cases[i].name, cases[i].model_id, s, sizeof s);
    assert_string_equal(s, cases[i].slug);
  }
  const hl_device_facts *f = hl_device_facts_get(HL_DEVICE_CPU);
  hl_device_slug_of(HL_DEVICE_CPU, f->name, f->model_id, s, sizeof s);
  assert_string_equal(hl_device_slug(HL_DEVICE_CPU), s);
  assert_true(strpbrk(s, "0123456789") != NULL || !f->model_id[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_numbers_as_text),
      cmocka_unit_test(test_rows),
      cmocka_unit_test(test_crc32),
      cmocka_unit_test(test_atomic_file),
      cmocka_unit_test(test_machine_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
