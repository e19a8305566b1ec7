/* text_gen.c — the text of --task text when no --text FILE is given (the
 * small preset's data): English-like sentences built from a fixed word list,
 * every choice drawn from Philox under the run's seed. Nothing is
 * downloaded, and every mode, a resumed run and the PyTorch peer (through
 * the exported batches) see the same bytes.
 *
 * It is not meant to read well: a few hundred words, a handful of sentence
 * shapes, paragraphs of three to seven sentences. That gives a byte-level
 * model what real text has at the small scale — spelling, word order,
 * articles, capitals, punctuation, line breaks — so the loss falls for a
 * long while instead of collapsing onto a trivial pattern.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "formats/philox.h"
#include "train/train.h"

/* Philox stream of the generator: far from data.c's row streams (mixed
 * 64-bit values), so the text and the batch offsets are independent. */
#define TEXT_STREAM 0x7465787400000000ull /* "text" */

#define COUNT(a) (uint32_t)(sizeof(a) / sizeof((a)[0]))

static const char *const nouns[] = {
    "river", "garden", "window", "letter", "mountain", "village", "bridge", "lamp", "basket", "forest", "road",
    "harbour", "boat", "kitchen", "teacher", "farmer", "miller", "child", "doctor", "sailor", "horse", "dog", "cat",
    "bird", "wolf", "fox", "apple", "orchard", "candle", "door", "table", "chair", "book", "map", "key", "stone",
    "field", "storm", "winter", "summer", "island", "castle", "market", "baker", "soldier", "song", "story", "clock",
    "train", "station", "coat", "hill", "lake", "tower", "queen", "king", "owl", "engine", "painter", "ocean"};
static const char *const adjectives[] = {
    "old", "young", "quiet", "small", "large", "bright", "dark", "cold", "warm", "green", "red", "heavy", "empty",
    "narrow", "wide", "gentle", "angry", "tired", "clever", "silent", "ancient", "little", "golden", "broken",
    "distant", "open", "strange", "careful", "hungry", "early"};
/* base and past forms */
static const char *const transitive[][2] = {
    {"see", "saw"},         {"find", "found"},       {"carry", "carried"},   {"open", "opened"},
    {"paint", "painted"},   {"follow", "followed"},  {"watch", "watched"},   {"build", "built"},
    {"mend", "mended"},     {"sell", "sold"},        {"buy", "bought"},      {"read", "read"},
    {"write", "wrote"},     {"hear", "heard"},       {"remember", "remembered"}, {"leave", "left"},
    {"keep", "kept"},       {"hold", "held"},        {"bring", "brought"},   {"lose", "lost"},
    {"visit", "visited"},   {"cross", "crossed"},    {"clean", "cleaned"},   {"wake", "woke"}};
static const char *const intransitive[][2] = {
    {"sleep", "slept"},  {"laugh", "laughed"}, {"wait", "waited"}, {"sing", "sang"},     {"run", "ran"},
    {"fall", "fell"},    {"rise", "rose"},     {"shine", "shone"}, {"listen", "listened"}, {"rest", "rested"},
    {"walk", "walked"},  {"work", "worked"},   {"smile", "smiled"}, {"return", "returned"}, {"arrive", "arrived"}};
static const char *const adverbs[] = {"quietly", "slowly", "again", "at last", "all night", "for a while",
                                      "without a word", "every morning", "once more", "very early", "at noon",
                                      "in the rain", "before dawn", "gladly"};
static const char *const prepositions[] = {"near", "behind", "under", "above", "beside", "across", "through",
                                           "along", "past", "beyond", "inside", "around"};
static const char *const names[] = {"Anna", "Tom", "Mira", "Oscar", "Lena", "Hugo", "Clara", "Felix", "Ida",
                                    "Paul", "Rosa", "Ben"};
static const char *const openers[] = {"After the storm", "In the morning", "Long ago", "That evening",
                                      "By the fire", "At the market", "Later", "In winter", "Before the rain",
                                      "On the third day"};

typedef struct {
  uint64_t seed, draw; /* Philox word counter */
  uint8_t *out;
  int64_t at, len;
  bool capital; /* the next letter starts a sentence */
} writer;

static uint32_t pick(writer *w, uint32_t n) {
  return (uint32_t)(((uint64_t)hl_philox_u32(w->seed, TEXT_STREAM, w->draw++) * n) >> 32);
}

static void put(writer *w, const char *s) {
  for (; *s && w->at < w->len; s++) {
    char c = *s;
    if (w->capital && c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
    if (c != ' ' && c != '"') w->capital = false;
    w->out[w->at++] = (uint8_t)c;
  }
}

static bool vowel(char c) { return strchr("aeiou", c) != NULL; }

/* "the old fox", "an empty basket", "Mira" */
static void noun_phrase(writer *w) {
  if (pick(w, 6) == 0) {
    put(w, names[pick(w, COUNT(names))]);
    return;
  }
  const char *adj = pick(w, 2) ? adjectives[pick(w, COUNT(adjectives))] : NULL;
  const char *noun = nouns[pick(w, COUNT(nouns))];
  const char *first = adj ? adj : noun;
  put(w, pick(w, 3) ? "the " : vowel(first[0]) ? "an " : "a ");
  if (adj) {
    put(w, adj);
    put(w, " ");
  }
  put(w, noun);
}

static void place(writer *w) {
  put(w, prepositions[pick(w, COUNT(prepositions))]);
  put(w, " ");
  noun_phrase(w);
}

static void sentence(writer *w) {
  w->capital = true;
  switch (pick(w, 7)) {
    case 0: /* The old miller found a lamp near the river. */
      noun_phrase(w), put(w, " "), put(w, transitive[pick(w, COUNT(transitive))][1]), put(w, " ");
      noun_phrase(w), put(w, " "), place(w), put(w, ".");
      break;
    case 1: /* A young fox slept quietly. */
      noun_phrase(w), put(w, " "), put(w, intransitive[pick(w, COUNT(intransitive))][1]), put(w, " ");
      put(w, adverbs[pick(w, COUNT(adverbs))]), put(w, ".");
      break;
    case 2: /* Anna carried the basket, and the wind rose. */
      noun_phrase(w), put(w, " "), put(w, transitive[pick(w, COUNT(transitive))][1]), put(w, " ");
      noun_phrase(w), put(w, pick(w, 2) ? ", and " : ", but "), noun_phrase(w), put(w, " ");
      put(w, intransitive[pick(w, COUNT(intransitive))][1]), put(w, ".");
      break;
    case 3: /* After the storm, the fox waited near the lake. */
      put(w, openers[pick(w, COUNT(openers))]), put(w, ", "), noun_phrase(w), put(w, " ");
      put(w, intransitive[pick(w, COUNT(intransitive))][1]), put(w, " "), place(w), put(w, ".");
      break;
    case 4: /* Did the farmer see the boat? */
      put(w, "did "), noun_phrase(w), put(w, " "), put(w, transitive[pick(w, COUNT(transitive))][0]), put(w, " ");
      noun_phrase(w), put(w, "?");
      break;
    case 5: /* "Wait here," said Tom. */
      put(w, "\""), put(w, intransitive[pick(w, COUNT(intransitive))][0]), put(w, " "), place(w);
      put(w, pick(w, 4) ? ",\" said " : "!\" cried "), put(w, names[pick(w, COUNT(names))]), put(w, ".");
      break;
    default: /* When the dog slept, a miller found the key. */
      put(w, "when "), noun_phrase(w), put(w, " "), put(w, intransitive[pick(w, COUNT(intransitive))][1]);
      put(w, ", "), noun_phrase(w), put(w, " "), put(w, transitive[pick(w, COUNT(transitive))][1]), put(w, " ");
      noun_phrase(w), put(w, ".");
      break;
  }
}

void text_generate(uint64_t seed, uint8_t *out, int64_t len) {
  writer w = {seed, 0, out, 0, len, true};
  while (w.at < w.len) {
    const uint32_t n = 3 + pick(&w, 5); /* sentences in this paragraph */
    for (uint32_t s = 0; s < n && w.at < w.len; s++) {
      if (s) put(&w, " ");
      sentence(&w);
    }
    put(&w, "\n\n");
  }
}
