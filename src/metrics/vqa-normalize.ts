/**
 * Answer normalisation of the official VQA evaluation, ported character for character from
 * GT-Vision-Lab/VQA PythonEvaluationTools/vqaEvaluation/vqaEval.py at a013f00 (2021-03-11, "Fixed
 * processing answers bug"). Every table and regex below is the one in that file; the Python
 * semantics that JavaScript does not share (str.strip/split whitespace, `\d` = Unicode digit, the
 * period regex's count quirk) are reproduced explicitly.
 */

/** 120 entries, verbatim (straight apostrophes, as in the file since the 2016 apostrophe fix). */
const CONTRACTIONS: Record<string, string> = {
  aint: "ain't",
  arent: "aren't",
  cant: "can't",
  couldve: "could've",
  couldnt: "couldn't",
  "couldn'tve": "couldn't've",
  "couldnt've": "couldn't've",
  didnt: "didn't",
  doesnt: "doesn't",
  dont: "don't",
  hadnt: "hadn't",
  "hadnt've": "hadn't've",
  "hadn'tve": "hadn't've",
  hasnt: "hasn't",
  havent: "haven't",
  hed: "he'd",
  "hed've": "he'd've",
  "he'dve": "he'd've",
  hes: "he's",
  howd: "how'd",
  howll: "how'll",
  hows: "how's",
  // The four capitalised keys can never match: words are lower-cased before the lookup (kept as is).
  "Id've": "I'd've",
  "I'dve": "I'd've",
  Im: "I'm",
  Ive: "I've",
  isnt: "isn't",
  itd: "it'd",
  "itd've": "it'd've",
  "it'dve": "it'd've",
  itll: "it'll",
  "let's": "let's",
  maam: "ma'am",
  mightnt: "mightn't",
  "mightnt've": "mightn't've",
  "mightn'tve": "mightn't've",
  mightve: "might've",
  mustnt: "mustn't",
  mustve: "must've",
  neednt: "needn't",
  notve: "not've",
  oclock: "o'clock",
  oughtnt: "oughtn't",
  "ow's'at": "'ow's'at",
  "'ows'at": "'ow's'at",
  "'ow'sat": "'ow's'at",
  shant: "shan't",
  "shed've": "she'd've",
  "she'dve": "she'd've",
  "she's": "she's",
  shouldve: "should've",
  shouldnt: "shouldn't",
  "shouldnt've": "shouldn't've",
  "shouldn'tve": "shouldn't've",
  // Sic: this entry maps the contracted form to the uncontracted one.
  "somebody'd": "somebodyd",
  "somebodyd've": "somebody'd've",
  "somebody'dve": "somebody'd've",
  somebodyll: "somebody'll",
  somebodys: "somebody's",
  someoned: "someone'd",
  "someoned've": "someone'd've",
  "someone'dve": "someone'd've",
  someonell: "someone'll",
  someones: "someone's",
  somethingd: "something'd",
  "somethingd've": "something'd've",
  "something'dve": "something'd've",
  somethingll: "something'll",
  thats: "that's",
  thered: "there'd",
  "thered've": "there'd've",
  "there'dve": "there'd've",
  therere: "there're",
  theres: "there's",
  theyd: "they'd",
  "theyd've": "they'd've",
  "they'dve": "they'd've",
  theyll: "they'll",
  theyre: "they're",
  theyve: "they've",
  twas: "'twas",
  wasnt: "wasn't",
  "wed've": "we'd've",
  "we'dve": "we'd've",
  weve: "we've",
  werent: "weren't",
  whatll: "what'll",
  whatre: "what're",
  whats: "what's",
  whatve: "what've",
  whens: "when's",
  whered: "where'd",
  wheres: "where's",
  whereve: "where've",
  whod: "who'd",
  "whod've": "who'd've",
  "who'dve": "who'd've",
  wholl: "who'll",
  whos: "who's",
  whove: "who've",
  whyll: "why'll",
  whyre: "why're",
  whys: "why's",
  wont: "won't",
  wouldve: "would've",
  wouldnt: "wouldn't",
  "wouldnt've": "wouldn't've",
  "wouldn'tve": "wouldn't've",
  yall: "y'all",
  "yall'll": "y'all'll",
  "y'allll": "y'all'll",
  "yall'd've": "y'all'd've",
  "y'alld've": "y'all'd've",
  "y'all'dve": "y'all'd've",
  youd: "you'd",
  "youd've": "you'd've",
  "you'dve": "you'd've",
  youll: "you'll",
  youre: "you're",
  youve: "you've",
};

const MANUAL_MAP: Record<string, string> = {
  none: "0",
  zero: "0",
  one: "1",
  two: "2",
  three: "3",
  four: "4",
  five: "5",
  six: "6",
  seven: "7",
  eight: "8",
  nine: "9",
  ten: "10",
};

const ARTICLES = new Set(["a", "an", "the"]);

/** The 21 characters of `self.punct` in file order (no `'`, `:`, `.` or `&`). */
export const VQA_PUNCTUATION: readonly string[] = [
  ";",
  "/",
  "[",
  "]",
  '"',
  "{",
  "}",
  "(",
  ")",
  "=",
  "+",
  "\\",
  "_",
  "-",
  ">",
  "<",
  "@",
  "`",
  ",",
  "?",
  "!",
];

// Maps instead of object lookups: no prototype keys ("constructor") can ever match.
const contractionMap = new Map(Object.entries(CONTRACTIONS));
const numberWordMap = new Map(Object.entries(MANUAL_MAP));

/** Number of contraction entries (120 in a013f00); exported for the parity test. */
export const VQA_CONTRACTION_COUNT = contractionMap.size;

/** Python `str.isspace()` characters (what `str.strip()` and `str.split()` use); differs from JS `\s`. */
const PY_SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const PY_STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, "g");
const PY_SPLIT = new RegExp(`[${PY_SPACE}]+`);
const TAB_OR_NEWLINE = /[\n\t]/g;

/** `commaStrip = re.compile("(\d)(\,)(\d)")`; Python 3 `\d` is any Unicode decimal digit (Nd). */
const COMMA_STRIP = /\p{Nd},\p{Nd}/u;
/**
 * `periodStrip = re.compile("(?!<=\d)(\.)(?!\d)")`. The leading `(?!<=\d)` is a malformed
 * look-behind: it is a look-ahead for the literal "<=" + digit, always true before a ".", so it is
 * dropped here. What remains: a period not followed by a digit.
 */
const PERIOD_STRIP = /\.(?!\p{Nd})/gu;
/**
 * The official code calls `periodStrip.sub("", outText, re.UNICODE)`: the flag lands in the `count`
 * argument, and re.UNICODE == 32, so at most the first 32 matching periods are removed.
 */
const PERIOD_STRIP_COUNT = 32;
/** Any character that processPunctuation may touch; answers without one skip it entirely. */
const TOUCHED_BY_PUNCTUATION = /[;/[\]"{}()=+\\_\-><@`,?!.]/;

/** `ans.replace('\n',' ').replace('\t',' ').strip()` with Python's whitespace set. */
export function stripAnswer(text: string): string {
  return text.replace(TAB_OR_NEWLINE, " ").replace(PY_STRIP, "");
}

/**
 * `processPunctuation`: each punctuation mark is deleted when it touches a space or when the text
 * contains a digit-comma-digit anywhere, otherwise replaced by a space. The conditions look at the
 * ORIGINAL text; the replacements act on the running text. Then periods not followed by a digit
 * are removed (at most 32, see PERIOD_STRIP_COUNT).
 */
export function processPunctuation(inText: string): string {
  if (!TOUCHED_BY_PUNCTUATION.test(inText)) return inText;
  const hasDigitComma = COMMA_STRIP.test(inText);
  let outText = inText;
  for (const p of VQA_PUNCTUATION) {
    // A mark absent from the original is absent from the running text too (it only loses
    // characters or gains spaces), so skipping it is exact.
    if (!inText.includes(p)) continue;
    const remove = inText.includes(`${p} `) || inText.includes(` ${p}`) || hasDigitComma;
    outText = outText.replaceAll(p, remove ? "" : " ");
  }
  if (!outText.includes(".")) return outText;
  let removed = 0;
  return outText.replace(PERIOD_STRIP, (match) => (removed++ < PERIOD_STRIP_COUNT ? "" : match));
}

/**
 * `processDigitArticle`: lower-case, split on whitespace, number words → digits, drop articles,
 * expand contractions, join with single spaces.
 */
export function processDigitArticle(inText: string): string {
  const words = inText.toLowerCase().split(PY_SPLIT);
  const out: string[] = [];
  for (const raw of words) {
    if (raw === "") continue; // Python's split() never yields empty words
    const word = numberWordMap.get(raw) ?? raw;
    if (ARTICLES.has(word)) continue;
    out.push(contractionMap.get(word) ?? word);
  }
  return out.join(" ");
}

// Rollouts score the same few answer strings over and over; a bounded memo makes repeats a lookup.
const MEMO_LIMIT = 50_000;
const memo = new Map<string, string>();

/** The full official normaliser: strip, then processPunctuation, then processDigitArticle. */
export function normalizeAnswer(text: string): string {
  let normalized = memo.get(text);
  if (normalized === undefined) {
    normalized = processDigitArticle(processPunctuation(stripAnswer(text)));
    if (memo.size >= MEMO_LIMIT) memo.clear();
    memo.set(text, normalized);
  }
  return normalized;
}
