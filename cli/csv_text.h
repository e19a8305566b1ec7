/* csv_text.h — text that goes into halflab's CSV files and comes back out.
 *
 * Writing: a value from the command line, the environment or a file may
 * hold anything. Every "# " metadata value and every text cell is made one
 * visible line (hl_text_one_line): control characters, invalid UTF-8 and a
 * byte order mark are written as escapes, so no line of a file ever splits
 * and every file is valid UTF-8. A text cell is then quoted as RFC 4180
 * says when it holds a comma or a double quote (hl_csv_cell), and only
 * then: a value without one is written as it is.
 *
 * Reading: halflab reads its own files back tolerantly (hl_csv_split):
 * CRLF line ends, a UTF-8 byte order mark and RFC 4180 quoted cells. */
#ifndef HL_CSV_TEXT_H
#define HL_CSV_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `in` as one line of valid UTF-8, in out (len > 0; always terminated):
 * LF, CR and TAB as \n, \r and \t; every other control character (C0, DEL,
 * C1), every byte that is not part of valid UTF-8 and the byte order mark
 * U+FEFF as \xHH per byte. Everything else, backslashes included, is kept.
 * Cut at a whole character or escape when it does not fit; false then. */
bool hl_text_one_line(const char *in, char *out, size_t len);
/* `in` as a CSV cell: one line (hl_text_one_line), then in double quotes
 * with each quote doubled when it holds a comma or a quote. false when it
 * did not fit (out then holds a shorter, still valid cell). */
bool hl_csv_cell(const char *in, char *out, size_t len);
/* Whether a cell needs quoting (a comma or a double quote in it). */
bool hl_csv_needs_quotes(const char *cell);

/* Past a UTF-8 byte order mark at the start of text, if any. */
const char *hl_csv_skip_bom(const char *text);
/* Whether the line ends inside a quoted cell (an odd count of double
 * quotes): the record continues on the next line. */
bool hl_csv_open_quote(const char *line);
/* Splits one record in place into its cells: a trailing LF, CRLF or CR is
 * dropped, quoted cells lose their quotes ("" becomes "). The number of
 * cells, or -1 when there are more than max or a quoted cell is followed by
 * something other than a comma or the end, or is never closed. */
int hl_csv_split(char *line, char **cells, int max);

#ifdef __cplusplus
}
#endif

#endif
