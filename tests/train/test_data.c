/* test_data.c — suite unit: the training data (train/data.c). The sorting
 * task's sequences (inputs, next-token targets, scored positions, packing),
 * its held-out split (no evaluation problem is ever trained on), the
 * determinism every mode and a resumed run rely on, the classification
 * teacher, text windows and the files refused, and the generated text of
 * --task text without a file (train/text_gen.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/hltest.h"
#include "train/train.h"

static void check_problem(const int32_t *idx, const int32_t *tgt, const uint8_t *scored, int n, int digits) {
  /* idx: x1..xn SEP y1..y(n-1); tgt: x2..xn SEP y1..yn; scored: the y targets */
  int count[64] = {0};
  for (int k = 0; k < n; k++) {
    assert_true(idx[k] >= 0 && idx[k] < digits);
    count[idx[k]]++;
  }
  assert_int_equal(idx[n], sort_sep_token(digits));
  for (int t = 0; t + 1 < 2 * n; t++) assert_int_equal(tgt[t], idx[t + 1]);
  for (int t = 0; t < 2 * n; t++) assert_int_equal(scored[t], t >= n);
  for (int k = 0; k < n; k++) { /* the y targets are the x sorted */
    const int32_t y = tgt[n + k];
    if (k) assert_true(y >= tgt[n + k - 1]);
    count[y]--;
  }
  for (int v = 0; v < digits; v++) assert_int_equal(count[v], 0);
}

static void test_sort_sequence(void **state) {
  (void)state;
  enum { N = 8, K = 10, T = 16 };
  int32_t idx[T], tgt[T];
  uint8_t sc[T];
  for (uint64_t s = 0; s < 200; s++) {
    sort_sequence(7, s, N, K, false, T, idx, tgt, sc);
    check_problem(idx, tgt, sc, N, K);
    assert_false(sort_problem_held_out(idx, N));
    sort_sequence(7, s, N, K, true, T, idx, tgt, sc);
    check_problem(idx, tgt, sc, N, K);
    assert_true(sort_problem_held_out(idx, N));
  }
  /* the same stream gives the same sequence */
  int32_t a[T], b[T], ta[T], tb[T];
  uint8_t sa[T], sb[T];
  sort_sequence(3, 99, N, K, false, T, a, ta, sa);
  sort_sequence(3, 99, N, K, false, T, b, tb, sb);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_equal(ta, tb, sizeof ta);
}

static void test_sort_packing(void **state) {
  (void)state;
  /* T = 40 holds two whole problems (17 tokens each) and the start of a third */
  enum { N = 8, K = 10, T = 40, LEN = 2 * N + 1 };
  int32_t idx[T], tgt[T];
  uint8_t sc[T];
  sort_sequence(1, 5, N, K, false, T, idx, tgt, sc);
  check_problem(idx, tgt, sc, N, K);
  check_problem(idx + LEN, tgt + LEN, sc + LEN, N, K);
  assert_int_equal(tgt[LEN - 1], idx[LEN]); /* the next problem's first number follows the last sorted one */
  assert_int_equal(sc[LEN - 1], 0);
  for (int t = 2 * LEN; t < T; t++) {
    assert_true(idx[t] >= 0 && idx[t] < K); /* numbers of the third problem */
    assert_int_equal(sc[t], 0);
  }
}

static train_opts opts_for(task_kind task) {
  train_opts o;
  memset(&o, 0, sizeof o);
  o.task = task;
  o.seed = 11;
  o.batch = 16;
  o.accum = 2;
  o.seq = task == TASK_CLASSIFY ? 1 : 16;
  o.sort_len = 8;
  o.sort_digits = 10;
  o.eval_samples = 64;
  o.eval_frac = 0.25;
  o.mlp.n_in = 12;
  o.classes = 5;
  return o;
}

static void test_batches_deterministic(void **state) {
  (void)state;
  train_opts o = opts_for(TASK_SORT);
  char err[256];
  train_data *d = data_new(&o, err, sizeof err);
  assert_non_null(d);
  assert_int_equal(data_vocab(d), 11);
  token_batch a = token_batch_new(16, 16), b = token_batch_new(16, 16);
  data_train_tokens(d, 4, 1, &a);
  data_train_tokens(d, 4, 1, &b);
  assert_memory_equal(a.idx, b.idx, 16 * 16 * 4);
  data_train_tokens(d, 4, 0, &b); /* another micro-batch, other data */
  assert_true(memcmp(a.idx, b.idx, 16 * 16 * 4) != 0);
  data_train_tokens(d, 5, 1, &b); /* another step */
  assert_true(memcmp(a.idx, b.idx, 16 * 16 * 4) != 0);
  for (int r = 0; r < 16; r++) assert_false(sort_problem_held_out(a.idx + r * 16, 8));
  /* the held-out rows: fixed, held out, and the same in any chunking */
  token_batch e = token_batch_new(8, 16), one = token_batch_new(1, 16);
  data_eval_tokens(d, 8, &e);
  for (int r = 0; r < 8; r++) {
    assert_true(sort_problem_held_out(e.idx + r * 16, 8));
    data_eval_tokens(d, 8 + r, &one);
    assert_memory_equal(one.idx, e.idx + r * 16, 16 * 4);
  }
  token_batch_free(&a);
  token_batch_free(&b);
  token_batch_free(&e);
  token_batch_free(&one);
  data_free(d);
}

static void test_classify(void **state) {
  (void)state;
  train_opts o = opts_for(TASK_CLASSIFY);
  char err[256];
  train_data *d = data_new(&o, err, sizeof err);
  assert_non_null(d);
  sample_batch a = sample_batch_new(512, 12), b = sample_batch_new(512, 12);
  data_train_samples(d, 1, 0, &a);
  data_train_samples(d, 1, 0, &b);
  assert_memory_equal(a.x, b.x, 512 * 12 * 4);
  assert_memory_equal(a.y, b.y, 512 * 4);
  int count[5] = {0};
  double mean = 0, var = 0;
  for (int i = 0; i < 512; i++) {
    assert_true(a.y[i] >= 0 && a.y[i] < 5);
    count[a.y[i]]++;
  }
  for (int i = 0; i < 512 * 12; i++) mean += a.x[i];
  mean /= 512 * 12;
  for (int i = 0; i < 512 * 12; i++) var += (a.x[i] - mean) * (a.x[i] - mean);
  var /= 512 * 12;
  assert_true(mean > -0.1 && mean < 0.1 && var > 0.85 && var < 1.15); /* N(0, 1) inputs */
  for (int c = 0; c < 5; c++) assert_true(count[c] > 512 / 25); /* every class occurs */
  data_eval_samples(d, 0, &b);
  assert_true(memcmp(a.x, b.x, 512 * 12 * 4) != 0);
  sample_batch_free(&a);
  sample_batch_free(&b);
  data_free(d);
}

static char *write_file(const char *dir, const char *name, const char *text, size_t len) {
  char *path = strdup(hl_path(dir, name));
  assert_non_null(path);
  hl_write_file(path, text, len);
  return path;
}

static void test_text(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  char text[400];
  for (int i = 0; i < 400; i++) text[i] = (char)('a' + (i * 7) % 26);
  char *path = write_file(dir, "t.txt", text, sizeof text);
  train_opts o = opts_for(TASK_TEXT);
  o.text_path = path;
  char err[256];
  train_data *d = data_new(&o, err, sizeof err);
  assert_non_null(d);
  assert_int_equal(data_vocab(d), 256);
  assert_int_equal(data_eval_rows(d), 100 / 17); /* the last quarter, in windows of 17 bytes */
  token_batch b = token_batch_new(16, 16);
  data_train_tokens(d, 1, 0, &b);
  for (int r = 0; r < 16; r++) {
    const int32_t *idx = b.idx + r * 16, *tgt = b.tgt + r * 16;
    bool found = false; /* a window of the head: text[at, at + 17) with at + 17 <= 300 */
    for (int at = 0; at + 17 <= 300 && !found; at++) {
      found = true;
      for (int t = 0; t < 16 && found; t++)
        found = idx[t] == (unsigned char)text[at + t] && tgt[t] == (unsigned char)text[at + t + 1];
    }
    assert_true(found);
    for (int t = 0; t < 16; t++) {
      if (t + 1 < 16) assert_int_equal(tgt[t], idx[t + 1]);
      assert_int_equal(b.scored[r * 16 + t], 1);
    }
  }
  token_batch e = token_batch_new(1, 16);
  data_eval_tokens(d, 1, &e);
  for (int t = 0; t < 16; t++) assert_int_equal(e.idx[t], (unsigned char)text[300 + 17 + t]);
  token_batch_free(&b);
  token_batch_free(&e);
  data_free(d);

  /* refused: a missing file, an empty one, one too short for a split */
  o.text_path = "/nonexistent/halflab.txt";
  assert_null(data_new(&o, err, sizeof err));
  assert_non_null(strstr(err, "cannot read"));
  char *empty = write_file(dir, "empty.txt", "", 0);
  o.text_path = empty;
  assert_null(data_new(&o, err, sizeof err));
  assert_non_null(strstr(err, "is empty"));
  char *shortf = write_file(dir, "short.txt", "abcdefghij", 10);
  o.text_path = shortf;
  assert_null(data_new(&o, err, sizeof err));
  assert_non_null(strstr(err, "need at least 34"));
  o.text_path = dir; /* a folder */
  assert_null(data_new(&o, err, sizeof err));
  free(path);
  free(empty);
  free(shortf);
  hl_rmtree(dir);
  free(dir);
}

/* The generated text: a pure function of the seed whose prefix does not
 * depend on the length; sentences of lower-case words, starting with a
 * capital and ending in . ? or !; paragraphs; another seed, another text;
 * and --task text without --text trains on it. */
static void test_generated_text(void **state) {
  (void)state;
  enum { N = 20000 };
  uint8_t *a = malloc(N), *b = malloc(N), *c = malloc(N), *shorter = malloc(N / 2);
  assert_true(a && b && c && shorter);
  text_generate(1, a, N);
  text_generate(1, b, N);
  text_generate(2, c, N);
  text_generate(1, shorter, N / 2);
  assert_memory_equal(a, b, N);
  assert_memory_equal(a, shorter, N / 2);
  assert_memory_not_equal(a, c, N);
  int sentences = 0, paragraphs = 0, letters = 0;
  bool sentence_start = true;
  for (int i = 0; i < N; i++) {
    const char ch = (char)a[i];
    assert_true(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .,?!\"\n", ch) != NULL);
    if (ch >= 'A' && ch <= 'Z') assert_true(sentence_start || (i > 0 && a[i - 1] == ' ')); /* names inside */
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      if (sentence_start) assert_true(ch >= 'A' && ch <= 'Z');
      sentence_start = false;
      letters++;
    }
    if (strchr(".?!", ch) && (i + 1 == N || a[i + 1] == ' ' || a[i + 1] == '\n')) { /* not !" inside a quote */
      sentence_start = true;
      sentences++;
    }
    if (ch == '\n' && i > 0 && a[i - 1] == '\n') paragraphs++;
  }
  print_message("20000 generated bytes: %d sentences, %d paragraphs, %d letters\n", sentences, paragraphs, letters);
  assert_true(sentences > N / 80 && sentences < N / 20); /* sentences of some 20 to 80 characters */
  assert_true(paragraphs > sentences / 8 && paragraphs < sentences / 2);
  assert_true(letters > N * 7 / 10);

  /* --task text with no file: the data is that text */
  train_opts o = opts_for(TASK_TEXT);
  o.text_path = NULL;
  char err[256];
  train_data *d = data_new(&o, err, sizeof err);
  assert_non_null(d);
  assert_int_equal(data_vocab(d), 256);
  assert_non_null(strstr(data_describe(d), "generated English-like sentences"));
  token_batch e = token_batch_new(1, 16);
  data_eval_tokens(d, 0, &e);
  uint8_t *whole = malloc(TEXT_GENERATED_BYTES);
  assert_non_null(whole);
  text_generate(o.seed, whole, TEXT_GENERATED_BYTES);
  const int64_t tail = TEXT_GENERATED_BYTES - (int64_t)(TEXT_GENERATED_BYTES * o.eval_frac); /* first held-out byte */
  for (int t = 0; t < 16; t++) assert_int_equal(e.idx[t], whole[tail + t]);
  token_batch_free(&e);
  data_free(d);
  free(whole);
  free(a);
  free(b);
  free(c);
  free(shorter);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sort_sequence), cmocka_unit_test(test_sort_packing),
      cmocka_unit_test(test_batches_deterministic), cmocka_unit_test(test_classify), cmocka_unit_test(test_text),
      cmocka_unit_test(test_generated_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
