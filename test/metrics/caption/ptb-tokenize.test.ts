/**
 * Hand cases for the PTB tokenizer, one rule each (CoreNLP 3.4.1 PTBLexer.flex with pycocoevalcap's
 * options, then pycocoevalcap's lower-casing and punctuation filter). Expected tokens are what the
 * .flex rules produce, worked out by hand from the rule named in each comment.
 */
import { describe, expect, test } from "vitest";
import { caseless, PTB_RULES } from "../../../src/metrics/caption/ptb-rules.js";
import {
  PYCOCOEVALCAP_PUNCTUATIONS,
  ptbLexLine,
  ptbTokenize,
  tokenizeCaption,
} from "../../../src/metrics/caption/ptb-tokenize.js";

const HAND_CASES: [string, string[]][] = [
  // WORD + lower-casing (-lowerCase); the final "." is its own token, then filtered
  [
    "A man riding a wave on top of a surfboard.",
    ["a", "man", "riding", "a", "wave", "on", "top", "of", "a", "surfboard"],
  ],
  // runs of spaces and tabs separate tokens and make none
  ["two   dogs\tplaying", ["two", "dogs", "playing"]],
  // a "\n" inside a caption is a space (pycocoevalcap replaces it before tokenizing)
  ["a cat\non a mat", ["a", "cat", "on", "a", "mat"]],
  // INSENTP: , ; : are tokens, all three filtered
  ["red, white; blue: done", ["red", "white", "blue", "done"]],
  // [?!]+: a lone ? or ! is filtered, a run such as "?!" or "!!" is one token and survives the filter
  ["what? wow! really?! yes!!", ["what", "wow", "really", "?!", "yes", "!!"]],
  // WORD/REDAUX: possessive 's split off
  ["the dog's bone", ["the", "dog", "'s", "bone"]],
  // QUOTES: the apostrophe of a plural possessive is a lone ' token, filtered
  ["the dogs' bones", ["the", "dogs", "bones"]],
  // SWORD/SREDAUX: n't split off; the stem keeps what precedes the n ("ca" of can't)
  ["it isn't and can't be", ["it", "is", "n't", "and", "ca", "n't", "be"]],
  // SREDAUX in capitals: caseless literal n't, lower-cased afterwards
  ["DON'T STOP", ["do", "n't", "stop"]],
  // REDAUX: 're 'll 'm 've 'd
  ["we're she'll I'm they've you'd", ["we", "'re", "she", "'ll", "i", "'m", "they", "'ve", "you", "'d"]],
  // REDAUX after a name in capitals: 'S
  ["JOHN'S CAR", ["john", "'s", "car"]],
  // the curly apostrophe (U+2019) is an APOS: REDAUX, normalised to ' by latexQuotes
  ["the cat’s toy", ["the", "cat", "'s", "toy"]],
  // cannot: pushback 3, "can" + "not"
  ["he cannot swim", ["he", "can", "not", "swim"]],
  // gonna|gotta|wanna|lemme|gimme: pushback 2
  ["gonna gotta wanna lemme gimme", ["gon", "na", "got", "ta", "wan", "na", "lem", "me", "gim", "me"]],
  // 'tis: pushback 2, "'t" + "is" ('t is not in the filter list)
  ["'tis fine", ["'t", "is", "fine"]],
  // 'twas: pushback 3
  ["'twas night", ["'t", "was", "night"]],
  // normalizeParentheses: ( ) → -LRB- -RRB-, lower-cased, so NOT filtered (the list has -LRB-)
  ["a sign (red)", ["a", "sign", "-lrb-", "red", "-rrb-"]],
  // normalizeOtherBrackets: [ ] → -LSB- -RSB- (never in the filter list)
  ["a [blue] box", ["a", "-lsb-", "blue", "-rsb-", "box"]],
  // normalizeOtherBrackets: { } → -LCB- -RCB-, lower-cased so not filtered either
  ["a {green} box", ["a", "-lcb-", "green", "-rcb-", "box"]],
  // DBLQUOT/[A-Za-z0-9$] → ``, DBLQUOT → '' (latexQuotes), both filtered
  ['a sign that says "stop" here', ["a", "sign", "that", "says", "stop", "here"]],
  // lexed form of the double quotes: `` before a letter, '' after
  ['"stop"', ["``", "stop", "''"]],
  // curly double and single quotes: by shape to `` '' ` ', all filtered
  ["“curly” ‘single’", ["curly", "single"]],
  // '/[A-Za-z][^ \t\n\r]: an opening single quote before a word → `, filtered
  ["the 'best' cat", ["the", "best", "cat"]],
  // LDOTS: ... (3-5 dots) → "...", filtered
  ["wait... what", ["wait", "what"]],
  // LDOTS: spaced dots ". . ." and the ellipsis character are "..." too
  ["wait . . . what … now", ["wait", "what", "now"]],
  // HYPHENS: "-" and "--" filtered; 3-4 hyphens become "--" (filtered); 5 stay and survive
  ["a - b -- c --- d ----- e", ["a", "b", "c", "d", "-----", "e"]],
  // SPMDASH: en and em dashes → "--", filtered
  ["a – b — c", ["a", "b", "c"]],
  // THING: hyphenated words stay whole
  ["a t-shirt and a well-dressed man", ["a", "t-shirt", "and", "a", "well-dressed", "man"]],
  // HTHING: hyphenated with digits stays whole
  ["a 3-year-old boy", ["a", "3-year-old", "boy"]],
  // THING: underscores are HYPHENs inside a THING
  ["black_and_white cat", ["black_and_white", "cat"]],
  // NUMBER: commas and decimals kept in one token
  ["1,000 people and 3.5 kg", ["1,000", "people", "and", "3.5", "kg"]],
  // NUMBER: a sign is part of the number; a time is a NUM with ":"
  ["-5 degrees at 3:30", ["-5", "degrees", "at", "3:30"]],
  // DOLSIGN: $ is its own token (kept), the amount a NUMBER
  ["$1,000.50 each", ["$", "1,000.50", "each"]],
  // FRAC: "2 1/2" is one token with a no-break space (normalizeSpace), so one word for the scorers
  ["2 1/2 pizzas", ["2\u00A01/2", "pizzas"]],
  // FRAC2 + normalizeFractions: ½ → 1/2
  ["½ cup", ["1/2", "cup"]],
  // DOLSIGN2 + normalizeCurrency: £ → #, ¢ → cents, € → $
  ["£5 ¢ €", ["#", "5", "cents", "$"]],
  // DATE: d/m/y stays whole
  ["on 12/25/2010", ["on", "12/25/2010"]],
  // THING3: slash compounds stay whole (escapeForwardSlashAsterisk is off in 3.4.1)
  ["a black/white photo", ["a", "black/white", "photo"]],
  // ABBREV2: titles keep their period
  ["Mr. Smith and Dr. Who", ["mr.", "smith", "and", "dr.", "who"]],
  // ABBREV2 via ACRO: dotted acronyms keep their final period
  ["a u.s. flag", ["a", "u.s.", "flag"]],
  // ABBREV1 at a line end: "etc." plus a second "." (filtered)
  ["apples, pears etc.", ["apples", "pears", "etc."]],
  // ACRONYM/(space)(The|A|...): a one-letter "acronym" before a capitalised function word loses its period
  ["plan a. The end", ["plan", "a", "the", "end"]],
  // WORD: [.!?] between letters does not split ("end.Next" is one WORD)
  ["the end.Next one", ["the", "end.next", "one"]],
  // APOWORD: 'n' and '90s, o'clock (THING with the o' prefix), y' before a letter
  [
    "rock 'n' roll at 5 o'clock in the '90s y'all",
    ["rock", "'n'", "roll", "at", "5", "o'clock", "in", "the", "'90s", "y'", "all"],
  ],
  // THINGA: capitals joined by & stay whole
  ["an AT&T store", ["an", "at&t", "store"]],
  // EMAIL and LIKELYURL / FULLURL stay whole
  [
    "mail a@b.com or www.google.com or http://x.org/a",
    ["mail", "a@b.com", "or", "www.google.com", "or", "http://x.org/a"],
  ],
  // SMILEY: ":)" before a space is one token with the bracket escaped
  ["so happy :) ok", ["so", "happy", ":-rrb-", "ok"]],
  // MISCSYMBOL: & + % are tokens of their own and are kept
  ["salt & pepper + 50 %", ["salt", "&", "pepper", "+", "50", "%"]],
  // SPAMP: &amp; → &
  ["salt &amp; pepper", ["salt", "&", "pepper"]],
  // untokenizable characters (an emoji) are dropped
  ["a dog 🐶 here", ["a", "dog", "here"]],
  // an empty caption, or one of punctuation only, has no tokens (the scorers see "")
  ["", []],
  [" . , ! ", []],
];

describe("ptbTokenize: hand cases", () => {
  test("there are at least 40 documented hand cases", () => {
    expect(HAND_CASES.length).toBeGreaterThanOrEqual(40);
  });

  test.each(HAND_CASES)("%j", (caption, tokens) => {
    if (tokens.some((t) => t.startsWith("``"))) expect(ptbLexLine(caption)).toEqual(tokens);
    else expect(ptbTokenize(caption)).toEqual(tokens);
  });
});

describe("ptbTokenize: the pieces", () => {
  test("the punctuation list is tokenizer/ptbtokenizer.py's, in its order", () => {
    expect(PYCOCOEVALCAP_PUNCTUATIONS).toEqual([
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
    ]);
  });

  test("tokenizeCaption joins the tokens with single spaces", () => {
    expect(tokenizeCaption("A Dog's  life.")).toBe("a dog 's life");
    expect(tokenizeCaption("...")).toBe("");
  });

  test("caseless widens literal letters only, not classes or escapes (JFlex %caseless)", () => {
    expect(caseless("ab")).toBe("[aA][bB]");
    expect(caseless("[A]bout")).toBe("[A][bB][oO][uU][tT]");
    expect(caseless("\\p{L}\\u00ADn")).toBe("\\p{L}\\u00AD[nN]");
  });

  test("every rule is a sticky Unicode pattern with a rule group and a context group", () => {
    for (const rule of PTB_RULES) {
      expect(rule.pattern.flags, rule.name).toContain("y");
      expect(rule.pattern.flags, rule.name).toContain("u");
      rule.pattern.lastIndex = 0;
      expect(rule.pattern.exec("")?.length ?? 3, rule.name).toBe(3);
    }
  });
});
