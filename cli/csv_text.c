/* csv_text.c — one-line escaping, RFC 4180 cells, and splitting records read back. */
#include "cli/csv_text.h"

#include <stdio.h>
#include <string.h>

/* The length of the valid UTF-8 character at s (1 to 4), 0 when s does not
 * start one: overlong forms, surrogates and code points past U+10FFFF are
 * invalid, as a strict decoder (Python's) says. */
static size_t utf8_length(const unsigned char *s) {
  const unsigned char c = s[0];
  size_t n;
  unsigned min;
  unsigned cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1Fu, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0Fu, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07u, min = 0x10000;
  else return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

/* Whether the character of n bytes at s is written as escapes: a control
 * character (C0, DEL, C1) or the byte order mark. */
static bool escaped(const unsigned char *s, size_t n) {
  if (n == 1) return s[0] < 0x20 || s[0] == 0x7F;
  if (n == 2) return s[0] == 0xC2 && s[1] <= 0x9F;
  return n == 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF;
}

bool hl_text_one_line(const char *in, char *out, size_t len) {
  const unsigned char *s = (const unsigned char *)in;
  size_t k = 0;
  while (*s) {
    size_t n = utf8_length(s);
    char piece[16];
    size_t m;
    if (n && !escaped(s, n)) {
      memcpy(piece, s, n);
      m = n;
    } else {
      if (!n) n = 1; /* one byte that is not UTF-8 */
      m = 0;
      for (size_t i = 0; i < n; i++) {
        const unsigned char c = s[i];
        if (c == '\n') memcpy(piece + m, "\\n", 2);
        else if (c == '\r') memcpy(piece + m, "\\r", 2);
        else if (c == '\t') memcpy(piece + m, "\\t", 2);
        else {
          snprintf(piece + m, sizeof piece - m, "\\x%02X", c);
          m += 2;
        }
        m += 2;
      }
    }
    if (k + m >= len) {
      out[k] = '\0';
      return false;
    }
    memcpy(out + k, piece, m);
    k += m;
    s += n;
  }
  out[k] = '\0';
  return true;
}

bool hl_csv_needs_quotes(const char *cell) { return strpbrk(cell, ",\"") != NULL; }

bool hl_csv_cell(const char *in, char *out, size_t len) {
  bool fits = hl_text_one_line(in, out, len);
  if (!hl_csv_needs_quotes(out)) return fits;
  size_t quotes = 0, n = strlen(out);
  for (size_t i = 0; i < n; i++) quotes += out[i] == '"';
  /* cut until the quoted cell fits, at a whole UTF-8 character */
  while (n + quotes + 2 >= len || (n > 0 && ((unsigned char)out[n] & 0xC0) == 0x80)) {
    fits = false;
    quotes -= out[--n] == '"';
  }
  out[n + quotes + 2] = '\0';
  out[n + quotes + 1] = '"';
  for (size_t i = n, k = n + quotes; i-- > 0;) { /* from the end, so that nothing is overwritten before it moves */
    out[k--] = out[i];
    if (out[i] == '"') out[k--] = '"';
  }
  out[0] = '"';
  return fits;
}

const char *hl_csv_skip_bom(const char *text) {
  return strncmp(text, "\xEF\xBB\xBF", 3) ? text : text + 3;
}

bool hl_csv_open_quote(const char *line) {
  bool open = false;
  for (const char *p = line; *p; p++) open ^= *p == '"';
  return open;
}

int hl_csv_split(char *line, char **cells, int max) {
  size_t len = strlen(line);
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
  int n = 0;
  char *p = line;
  for (;;) {
    if (n == max) return -1;
    cells[n++] = p;
    if (*p == '"') { /* quoted: unquote in place */
      char *to = p;
      for (p++;; p++) {
        if (!*p) return -1; /* never closed */
        if (*p == '"') {
          if (p[1] != '"') break;
          p++;
        }
        *to++ = *p;
      }
      p++; /* past the closing quote */
      *to = '\0';
      if (*p != ',' && *p) return -1;
    } else {
      p += strcspn(p, ",");
    }
    if (!*p) return n;
    *p++ = '\0';
  }
}
