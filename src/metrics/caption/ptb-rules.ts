/**
 * The lexer rules of Stanford CoreNLP 3.4.1's PTBTokenizer (stanfordnlp/CoreNLP tag v3.4.1,
 * src/edu/stanford/nlp/process/PTBLexer.flex), the tokenizer pycocoevalcap runs as
 * `PTBTokenizer -preserveLines -lowerCase`, i.e. with the lexer's defaults plus `tokenizeNLs`:
 * ptb3Escaping normalisations on (brackets → -LRB- -RRB- -LSB- -RSB- -LCB- -RCB-, LaTeX quotes,
 * "..." ellipsis, "--" dashes, ½ → 1/2, £ → #), americanize OFF, escapeForwardSlashAsterisk OFF,
 * splitAssimilations ON (cannot, gonna, 'tis), not strictTreebank3.
 *
 * The rules are kept in the .flex file's order, each its regular expression rewritten for JavaScript:
 *   - JFlex matches the LONGEST text, trailing context (`r/ctx`) included, ties going to the earlier
 *     rule (ptb-tokenize.ts does that); a JavaScript alternation takes the first alternative that
 *     fits, so alternatives that prefix one another are reordered longest first (NUM, ACRO, QUOTES,
 *     HTHING);
 *   - `%caseless`: literal letters match either case, letters inside [classes] do not (`caseless()`);
 *   - [:letter:] is \p{L}, [:digit:] \p{Nd}; LETTER adds the soft hyphen and combining marks (the
 *     .flex lists explicit mark ranges).
 * Left out, as they do not occur in captions: SGML character entities inside words (&eacute;), the
 * SGML-tag, phone-number-with-parentheses and Asian-smiley rules.
 */

/** JFlex `%caseless` for a pattern: every ASCII letter outside a [class] and outside an escape → [xX]. */
export function caseless(source: string): string {
  let out = "";
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") {
      const escaped = /^\\(?:p\{[^}]*\}|u[0-9A-Fa-f]{4}|.)/u.exec(source.slice(i))?.[0] ?? c;
      out += escaped;
      i += escaped.length - 1;
    } else if (c === "[") {
      const end = /^\[(?:\\.|[^\]\\])*\]/u.exec(source.slice(i))?.[0] ?? c;
      out += end;
      i += end.length - 1;
    } else if (/[A-Za-z]/.test(c)) out += `[${c.toLowerCase()}${c.toUpperCase()}]`;
    else out += c;
  }
  return out;
}

// The .flex macros, in JavaScript regex syntax (`u` flag).
const LETTER = "[\\p{L}\\p{M}\\u00AD]";
const DIGIT = "\\p{Nd}";
const SPACE = "[ \\t\\u00A0\\u2000-\\u200A\\u3000]";
const NEWLINE = "(?:\\r?\\n|\\r|\\u2028|\\u2029|\\u000B|\\u000C|\\u0085)";
const SPACENL = `(?:${SPACE}|${NEWLINE})`;
const SENTEND = `${SPACENL}(?:${SPACENL}|\\p{Lu})`;
const APOS = "(?:['\\u0092\\u2019]|&apos;)";
const APOSETCETERA = `(?:${APOS}|[\`\\u0091\\u2018\\u201B])`;
const HYPHEN = "[\\-_\\u058A\\u2010\\u2011]";
const NUM = `(?:${DIGIT}*(?:[.:,\\u00AD\\u066B\\u066C]${DIGIT}+)+|${DIGIT}+)`;
const WORD = `${LETTER}(?:${LETTER}|${DIGIT})*(?:[.!?]${LETTER}(?:${LETTER}|${DIGIT})*)*`;
const ALNUM = `(?:\\p{L}|${DIGIT})`;
const THING = `(?:[dDoOlL]${APOSETCETERA}${ALNUM})?${ALNUM}+(?:${HYPHEN}(?:[dDoOlL]${APOSETCETERA}${ALNUM})?${ALNUM}+)*`;
const ACRO_LITERAL = "(?:Canada|Sino|Korean|EU|Japan|non)-U\\.S|U\\.S\\.-(?:U\\.K|U\\.S\\.S\\.R)";
const ACRO = `(?:${ACRO_LITERAL}|[A-Za-z](?:\\.[A-Za-z])*)`;
const ACRO2 = `(?:${ACRO_LITERAL}|[A-Za-z](?:\\.[A-Za-z])+)`;
const HTHING = `[A-Za-z0-9][A-Za-z0-9.,\\u00AD]*(?:-(?:${ACRO2}\\.|[A-Za-z0-9\\u00AD]+))+`;
const THINGA = "[A-Z]+(?:(?:[+&]|&amp;)[A-Z]+)+";
const THING3 = "[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\\\?\\/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}";
const REDAUX = `${APOS}(?:[msdMSD]|re|ve|ll)`;
const SWORD = "[A-Za-z\\u00AD]*[A-MO-Za-mo-z]\\u00AD*";
const SREDAUX = `n${APOSETCETERA}t`;
const APOWORD = [
  `\\p{L}+[aeiouyAEIOUY]${APOSETCETERA}[aeiouA-Z]\\p{L}*`,
  `[A-HJ-XZn]${APOSETCETERA}\\p{L}{2}\\p{L}*`,
  `${APOS}n${APOS}?`,
  `[lLdDjJ]${APOS}`,
  `Dunkin${APOS}`,
  `somethin${APOS}`,
  `ol${APOS}`,
  `${APOS}em`,
  `${APOS}[2-9]0s`,
  `${APOS}till?`,
  `${APOS}cause`,
  "cont'd\\.?",
  "'twas",
  "nor'easter",
  "c'mon",
  "e'er",
  "s'mores",
  "ev'ry",
  "li'l",
  "nat'l",
  `O${APOSETCETERA}o`,
].join("|");
const ABMONTH = "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec";
const ABDAYS = "Mon|Tues|Tue|Thurs|Thu|Wed|Fri";
const ABSTATE =
  "Ala|Ariz|[A]z|[A]rk|Calif|Colo|Conn|Ct|Dak|[D]el|Fla|Ga|[I]ll|Ind|Kans?|Ky|[L]a|[M]ass|Md|Mich|Minn|[M]iss|Mo|Mont|Neb|Nev|Okla|[O]re|[P]a|Penn|Tenn|[T]ex|Va|Vt|[W]ash|Wisc?|Wyo";
const ABCOMP = "Inc|Cos?|Corp|Pp?t[ye]s?|Ltd|Plc|Rt|Bancorp|Bhd|Assn|Univ|Intl|Sys";
const ABBREV1 = `(?:${ABMONTH}|${ABDAYS}|${ABSTATE}|${ABCOMP}|tel|est|ext|sq|Jr|Sr|Bros|(?:Ed|Ph)\\.D|Blvd|Rd|Esq|etc|al|seq|Bldg)\\.`;
const ABTITLE =
  "Mrs|Mr|Ms|[M]iss|Drs?|Profs?|Sens?|Reps?|Attys?|Lt|Col|Gen|Messrs|Govs?|Adm|Rev|Maj|Sgt|Cpl|Pvt|Capt|Ste?|Ave|Pres|Lieut|Hon|Brig|Co?mdr|Pfc|Spc|Supts?|Det|Mt|Ft|Adj|Adv|Asst|Assoc|Ens|Insp|Mlle|Mme|Msgr|Sfc";
const ABBREV4 = `(?:${ABTITLE}|vs|Alex|Wm|Jos|Cie|a\\.k\\.a|cf|TREAS|Ph|${ACRO}|Invt|Elec|Natl|M[ft]g|Dept)`;
const ACRONYM_FOLLOWERS =
  "[A]bout|[A]ccording|[A]dditionally|[A]fter|[A]n|[A]|[A]s|[A]t|[B]ut|[E]arlier|[H]e|[H]er|[H]ere|[H]owever|[I]f|[I]n|[I]t|[L]ast|[M]any|[M]ore|[M]r\\.|[M]s\\.|[N]ow|[O]nce|[O]ne|[O]ther|[O]ur|[S]he|[S]ince|[S]o|[S]ome|[S]uch|[T]hat|[T]he|[T]heir|[T]hen|[T]here|[T]hese|[T]hey|[T]his|[W]e|[W]hen|[W]hile|[W]hat|[Y]et|[Y]ou";
const FILENAME_EXT =
  "bat|bmp|class|cgi|cpp|c|dll|docx|doc|exe|gif|gz|html|htm|h|jar|java|jpeg|jpg|mov|mp3|pdf|php|pl|png|ppt|ps|py|sql|tar|txt|wav|xml|x|zip";
const URL_END = '[^ \\t\\n\\f\\r"<>|.!?(){},\\-]';
const MISCSYMBOL =
  "[+%&~\\^|\\\\¦\\u00A7¨\\u00A9\\u00AC\\u00AE¯\\u00B0-\\u00B3\\u00B4-\\u00BA\\u00D7\\u00F7\\u0387\\u05BE\\u05C0\\u05C3\\u05C6\\u05F3\\u05F4\\u0600-\\u0603\\u0606-\\u060A\\u060C\\u0614\\u061B\\u061E\\u066A\\u066D\\u0703-\\u070D\\u07F6\\u07F7\\u07F8\\u0964\\u0965\\u0E4F\\u1FBD\\u2016\\u2017\\u2020-\\u2023\\u2030-\\u2038\\u203B\\u203E-\\u2042\\u2044\\u207A-\\u207F\\u208A-\\u208E\\u2100-\\u214F\\u2190-\\u21FF\\u2200-\\u2BFF\\u3012\\u30FB\\uFF01-\\uFF0F\\uFF1A-\\uFF20\\uFF3B-\\uFF40\\uFF5B-\\uFF65]";

/** What a rule does with its text: the token's form (null: no token) and, after a pushback, how much it consumed. */
export type RuleAction =
  | "raw"
  | "softHyphens"
  | "amp"
  | "quoteLeft"
  | "quoteRight"
  | "mdash"
  | "hyphens"
  | "ellipsis"
  | "fraction"
  | "currency"
  | "spaceToNbsp"
  | "brackets"
  | "lessThan"
  | "greaterThan"
  | "skip"
  | { pushback: number }
  | "abbrevPeriod"
  | "acronymPeriod";

export interface PtbRule {
  /** The .flex rule, for reading and for tests. */
  name: string;
  /** The rule's own text (group 1) followed by its trailing context (group 2, possibly empty). */
  pattern: RegExp;
  action: RuleAction;
}

function rule(name: string, main: string, action: RuleAction, context = ""): PtbRule {
  return { name, pattern: new RegExp(`(${caseless(main)})(${caseless(context)})`, "uy"), action };
}

/** The rules in PTBLexer.flex order (earlier wins a tie in length). */
export const PTB_RULES: readonly PtbRule[] = [
  rule("c++", "c[+][+]", "raw"),
  rule("c#", "(?:c|f)#", "raw"),
  rule("cannot", "cannot", { pushback: 3 }),
  rule("'twas", "'twas", { pushback: 3 }),
  rule("'tis", "'tis", { pushback: 2 }),
  rule("gonna", "gonna|gotta|lemme|gimme|wanna", { pushback: 2 }),
  rule("SPMDASH", "&(?:MD|mdash|ndash);|[\\u0096\\u0097\\u2013\\u2014\\u2015]", "mdash"),
  rule("SPAMP", "&amp;", "amp"),
  rule("SPPUNC", "&(?:HT|TL|UR|LR|QC|QL|QR|odq|cdq|#[0-9]+);", "raw"),
  rule("WORD/REDAUX", WORD, "softHyphens", REDAUX),
  rule("SWORD/SREDAUX", SWORD, "softHyphens", SREDAUX),
  rule("WORD", WORD, "softHyphens"),
  rule("APOWORD", APOWORD, "raw"),
  rule("APOWORD2", `y${APOS}`, "raw", "\\p{L}"),
  rule("FULLURL", `https?:\\/\\/[^ \\t\\n\\f\\r"<>|(){}]+${URL_END}`, "raw"),
  rule(
    "LIKELYURL",
    `(?:(?:www\\.(?:[^ \\t\\n\\f\\r"<>|.!?(){},]+\\.)+[a-zA-Z]{2,4})|(?:(?:[^ \\t\\n\\f\\r"\`'<>|.!?(){},-_$]+\\.)+(?:com|net|org|edu)))(?:\\/[^ \\t\\n\\f\\r"<>|()]+${URL_END})?`,
    "raw",
  ),
  rule(
    "EMAIL",
    '(?:&lt;|<)?[a-zA-Z0-9][^ \\t\\n\\f\\r"<>|()\\u00A0{}]*@(?:[^ \\t\\n\\f\\r"<>|(){}.\\u00A0]+\\.)*(?:[^ \\t\\n\\f\\r"<>|(){}.\\u00A0]+)(?:&gt;|>)?',
    "raw",
  ),
  rule("TWITTER", `@[a-zA-Z_][a-zA-Z_0-9]*|#${LETTER}+`, "raw"),
  rule("REDAUX/[^A-Za-z]", REDAUX, "quoteRight", "[^A-Za-z]"),
  rule("SREDAUX/[^A-Za-z]", SREDAUX, "quoteRight", "[^A-Za-z]"),
  rule("DATE", `${DIGIT}{1,2}[\\-\\/]${DIGIT}{1,2}[\\-\\/]${DIGIT}{2,4}`, "raw"),
  rule("NUMBER", `[\\-+]?${NUM}`, "softHyphens"),
  rule(
    "SUBSUPNUM",
    "[\\u207A\\u207B\\u208A\\u208B]?(?:[\\u2070\\u00B9\\u00B2\\u00B3\\u2074-\\u2079]+|[\\u2080-\\u2089]+)",
    "raw",
  ),
  rule("FRAC", `(?:${DIGIT}{1,4}[\\- \\u00A0])?${DIGIT}{1,4}(?:\\\\?\\/|\\u2044)${DIGIT}{1,4}`, "spaceToNbsp"),
  rule("FRAC2", "[\\u00BC\\u00BD\\u00BE\\u2153-\\u215E]", "fraction"),
  rule(
    "TBSPEC",
    "-(?:RRB|LRB|RCB|LCB|RSB|LSB)-|C\\.D\\.s|pro-|anti-|S(?:&amp;|&)P-500|S(?:&amp;|&)Ls|Cap" + `${APOS}n|c${APOS}est`,
    "amp",
  ),
  rule("THING3", THING3, "raw"),
  rule("DOLSIGN", "[A-Z]*\\$|#", "raw"),
  rule(
    "DOLSIGN2",
    "[\\u00A2\\u00A3\\u00A4\\u00A5\\u0080\\u20A0\\u20AC\\u060B\\u0E3F\\u20A4\\uFFE0\\uFFE1\\uFFE5\\uFFE6]",
    "currency",
  ),
  rule("ACRONYM/follower", `${ACRO}\\.`, "acronymPeriod", `${SPACENL}+(?:${ACRONYM_FOLLOWERS})${SPACENL}`),
  rule("ABBREV3/digit", "(?:ca|figs?|prop|nos?|art|bldg|pp|op)\\.", "raw", `${SPACENL}?\\p{Nd}`),
  rule("pty./ltd", "(?:pt[eyEY]|co)\\.", "raw", `${SPACE}(?:ltd|lim)`),
  rule("ABBREV1/SENTEND", ABBREV1, "abbrevPeriod", SENTEND),
  rule("ABBREV1/[^][^]", ABBREV1, "raw", "[^]{2}"),
  rule("ABBREV1", ABBREV1, "abbrevPeriod"),
  rule("ABBREV2", `${ABBREV4}\\.`, "raw"),
  rule("ABBREV4/SPACE", ABBREV4, "raw", SPACE),
  rule("ACRO/SPACENL", ACRO, "raw", SPACENL),
  rule("TBSPEC2/SPACENL", `${APOS}[0-9][0-9]`, "raw", SPACENL),
  rule(
    "FILENAME",
    `(?:${LETTER}|${DIGIT})+(?:[.](?:${LETTER}|${DIGIT})+)*(?:[.](?:${FILENAME_EXT}))`,
    "raw",
    `${SPACENL}|[.?!,]`,
  ),
  rule("WORD./INSENTP", `${WORD}\\.`, "softHyphens", "[,;:\\u3001]"),
  rule(
    "PHONE",
    "(?:(?:\\+\\+?)?(?:[0-9]{2,4}[\\- \\u00A0])?[0-9]{2,4}[\\- \\u00A0])[0-9]{3,4}[\\- \\u00A0]?[0-9]{3,5}|(?:(?:\\+\\+?)?[0-9]{2,4}\\.)?[0-9]{2,4}\\.[0-9]{3,4}\\.[0-9]{3,5}",
    "spaceToNbsp",
  ),
  rule("DBLQUOT/alnum", '"|&quot;', "quoteLeft", "[A-Za-z0-9$]"),
  rule("DBLQUOT", '"|&quot;', "quoteRight"),
  rule("\\x7f", "\\u007F", "skip"),
  rule("LESSTHAN", "<|&lt;", "lessThan"),
  rule("GREATERTHAN", ">|&gt;", "greaterThan"),
  rule("SMILEY", "[<>]?[:;=][\\-o*']?[()DPdpO\\\\{@|\\[\\]]", "brackets", "[^A-Za-z0-9]"),
  rule("brackets", "[{}\\[\\]()]", "brackets"),
  rule("HYPHENS", "-+", "hyphens"),
  rule("LDOTS", "\\.{3,5}|(?:\\.[ \\u00A0]){2,4}\\.|[\\u0085\\u2026]", "ellipsis"),
  rule("FNMARKS", "@+|#+|_+", "raw"),
  rule("ASTS", "\\*+|(?:\\\\\\*){1,3}", "raw"),
  rule("INSENTP", "[,;:\\u3001]", "raw"),
  rule("[?!]+", "[?!]+", "raw"),
  rule("sentence end", "[.¡¿\\u037E\\u0589\\u061F\\u06D4\\u0700-\\u0702\\u07FA\\u3002]", "raw"),
  rule("=", "=", "raw"),
  rule("/", "\\/", "raw"),
  rule("HTHING./INSENTP", `${HTHING}\\.`, "softHyphens", "[,;:\\u3001]"),
  rule("HTHING", HTHING, "softHyphens"),
  rule("THING./INSENTP", `${THING}\\.`, "raw", "[,;:\\u3001]"),
  rule("THING", THING, "raw"),
  rule("THINGA./INSENTP", `${THINGA}\\.`, "amp", "[,;:\\u3001]"),
  rule("THINGA", THINGA, "amp"),
  rule("'/letter", "'", "quoteLeft", "[A-Za-z][^ \\t\\n\\r\\u00A0]"),
  rule("REDAUX", REDAUX, "quoteRight"),
  rule("SREDAUX", SREDAUX, "quoteRight"),
  rule(
    "QUOTES",
    `''|[\`\\u2018\\u2019\\u201A\\u201B\\u201C\\u201D\\u0091\\u0092\\u0093\\u0094\\u201E\\u201F\\u2039\\u203A\\u00AB\\u00BB]{1,2}|${APOS}`,
    "quoteRight",
  ),
  rule("FAKEDUCKFEET", "<<|>>", "raw"),
  rule("MISCSYMBOL", MISCSYMBOL, "raw"),
  rule("spaces", `\\u0000|${SPACE}+|[\\u200B\\u200E\\u200F\\uFEFF]|&nbsp;`, "skip"),
  rule("NEWLINE", NEWLINE, "skip"),
];
