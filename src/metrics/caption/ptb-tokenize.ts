/**
 * pycocoevalcap's caption tokenizer (salaniz/pycocoevalcap at ad63453, tokenizer/ptbtokenizer.py)
 * without Java: each caption's "\n" become spaces, Stanford CoreNLP 3.4.1's PTBTokenizer
 * (`-preserveLines -lowerCase`, rules in ptb-rules.ts) splits the line into tokens, each token is
 * lower-cased (Java `toLowerCase(Locale.ENGLISH)`), and the tokens in PUNCTUATIONS below are dropped.
 * The scorers receive the remaining tokens joined by single spaces ("" when none remain).
 *
 * The lexer follows JFlex: at each position every rule is tried, the longest match wins (its
 * trailing context counted), ties go to the earlier rule; a rule may push characters back
 * ("cannot" → "can" + "not"); characters no rule matches are dropped (`untokenizable=firstDelete`).
 *
 * Known differences from running the jar: pycocoevalcap tokenizes all captions as one file, one
 * per line, so a caption's end may see the next caption's start as trailing context (only "a."
 * before a line starting "The …" differs, → "a" instead of "a."); we tokenize each caption as its
 * own line. A "\r" (or U+2028/2029, \v, \f) inside a caption ends a line for the jar and shifts
 * every later caption onto the wrong image; here it is a space. Characters outside the Basic
 * Multilingual Plane are one character here, two untokenizable halves for Java 7.
 */
import { PTB_RULES, type PtbRule, type RuleAction } from "./ptb-rules.js";

/** tokenizer/ptbtokenizer.py's PUNCTUATIONS, compared after lower-casing (so -LRB- etc. never match). */
export const PYCOCOEVALCAP_PUNCTUATIONS: readonly string[] = [
  "''",
  "'",
  "``",
  "`",
  "-LRB-",
  "-RRB-",
  "-LCB-",
  "-RCB-",
  ".",
  "?",
  "!",
  ",",
  ":",
  "-",
  "--",
  "...",
  ";",
];
const DROPPED = new Set(PYCOCOEVALCAP_PUNCTUATIONS);

const BRACKETS: Record<string, string> = {
  "(": "-LRB-",
  ")": "-RRB-",
  "[": "-LSB-",
  "]": "-RSB-",
  "{": "-LCB-",
  "}": "-RCB-",
};
const FRACTIONS: Record<string, string> = { "¼": "1/4", "½": "1/2", "¾": "3/4", "⅓": "1/3", "⅔": "2/3" };

/** PTBLexer's `latexQuotes`: ' and " by the side the rule guessed, curly quotes by their shape. */
function latexQuotes(text: string, probablyLeft: boolean): string {
  return text
    .replace(/&apos;|'/g, probablyLeft ? "`" : "'")
    .replace(/"|&quot;/g, probablyLeft ? "``" : "''")
    .replace(/[\u0091\u2018\u201B\u2039]/g, "`")
    .replace(/[\u0092\u2019\u203A]/g, "'")
    .replace(/[\u0093\u201C\u00AB]/g, "``")
    .replace(/[\u0094\u201D\u00BB]/g, "''");
}

/** PTBLexer's `removeSoftHyphens`. */
function removeSoftHyphens(text: string): string {
  const out = text.replaceAll("\u00AD", "");
  return out.length === 0 ? "-" : out;
}

/** The token a rule makes of its text, and how many characters it consumed (less after a pushback). */
function apply(action: RuleAction, text: string): { token: string | null; consumed: number } {
  const whole = (token: string | null) => ({ token, consumed: text.length });
  if (typeof action === "object")
    return { token: text.slice(0, -action.pushback), consumed: text.length - action.pushback };
  switch (action) {
    case "raw":
      return whole(text);
    case "softHyphens":
      return whole(removeSoftHyphens(text));
    case "amp":
      return whole(text.replace(/&amp;/gi, "&"));
    case "quoteLeft":
    case "quoteRight":
      return whole(latexQuotes(text, action === "quoteLeft"));
    case "mdash":
      return whole("--");
    case "hyphens":
      return whole(text.length >= 3 && text.length <= 4 ? "--" : text);
    case "ellipsis":
      return whole("...");
    case "fraction":
      return whole(FRACTIONS[text] ?? text);
    case "currency":
      return whole(
        text
          .replace(/\u00A2/g, "cents")
          .replace(/\u00A3/g, "#")
          .replace(/[\u0080\u00A4\u20A0\u20AC]/g, "$"),
      );
    case "spaceToNbsp":
      return whole(text.replaceAll(" ", "\u00A0"));
    case "brackets":
      return whole(text.replace(/[()[\]{}]/g, (c) => BRACKETS[c]));
    case "lessThan":
      return whole("<");
    case "greaterThan":
      return whole(">");
    case "skip":
      return whole(null);
    case "abbrevPeriod":
      return { token: text, consumed: text.length - 1 };
    case "acronymPeriod":
      return text.length === 2 ? { token: text[0], consumed: 1 } : { token: text, consumed: text.length - 1 };
  }
}

/** The rule JFlex would pick at `at`: longest match with its trailing context, ties to the earlier rule. */
function longestMatch(line: string, at: number): { rule: PtbRule; text: string } | null {
  let best: { rule: PtbRule; text: string; total: number } | null = null;
  for (const rule of PTB_RULES) {
    rule.pattern.lastIndex = at;
    const match = rule.pattern.exec(line);
    if (match === null || match[1].length === 0) continue;
    if (best === null || match[0].length > best.total) best = { rule, text: match[1], total: match[0].length };
  }
  return best;
}

/** PTBTokenizer's tokens of one line, before lower-casing and the punctuation filter. */
export function ptbLexLine(line: string): string[] {
  // The line ends with the newline pycocoevalcap's joined file puts after it (trailing context sees it).
  const text = `${line.replace(/[\n\r\v\f\u2028\u2029]/g, " ")}\n`;
  const tokens: string[] = [];
  let at = 0;
  while (at < text.length) {
    const match = longestMatch(text, at);
    if (match === null) {
      at += 1; // untokenizable: dropped
      continue;
    }
    const { token, consumed } = apply(match.rule.action, match.text);
    if (token !== null) tokens.push(token);
    at += consumed;
  }
  return tokens;
}

/** One caption as pycocoevalcap's scorers see it: PTB tokens, lower-cased, punctuation dropped. */
export function ptbTokenize(caption: string): string[] {
  return ptbLexLine(caption)
    .map((token) => token.toLowerCase())
    .filter((token) => !DROPPED.has(token));
}

/** `ptbTokenize` joined by single spaces: the string the BLEU, CIDEr-D and ROUGE-L scorers take. */
export function tokenizeCaption(caption: string): string {
  return ptbTokenize(caption).join(" ");
}
