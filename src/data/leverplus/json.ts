/**
 * Reading the JSON that the Python reference writes. Python's `json.dump` emits the non-standard
 * literals NaN, Infinity and -Infinity by default; `JSON.parse` rejects them with an error that
 * names no record. We parse them into real numbers so schema validation can name the record and
 * field that holds them.
 */
import { LeverError } from "../../util/errors.js";

const SENTINELS: Record<string, number> = {
  NaN: Number.NaN,
  Infinity: Number.POSITIVE_INFINITY,
  "-Infinity": Number.NEGATIVE_INFINITY,
};
/** A string no JSON file contains in practice: an escaped NUL followed by the literal's name. */
const MARK = "\u0000lever:";

/** Parses JSON text, accepting Python's NaN/Infinity/-Infinity. Syntax errors give line and column. */
export function parsePythonJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const replaced = replacePythonLiterals(text);
    if (replaced !== text) {
      try {
        return JSON.parse(replaced, (_key, value) =>
          typeof value === "string" && value.startsWith(MARK) ? SENTINELS[value.slice(MARK.length)] : value,
        );
      } catch {
        // Report the error of the original text below.
      }
    }
    throw new LeverError(`not valid JSON: ${describeSyntaxError(error as Error, text)}`, { file });
  }
}

/** Replaces NaN/Infinity/-Infinity tokens outside strings by marked strings (one linear scan). */
function replacePythonLiterals(text: string): string {
  const out: string[] = [];
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
      continue;
    }
    if (ch === 0x22) {
      inString = true;
      continue;
    }
    let token: string | undefined;
    if (ch === 0x4e && text.startsWith("NaN", i)) token = "NaN";
    else if (ch === 0x49 && text.startsWith("Infinity", i)) token = "Infinity";
    else if (ch === 0x2d && text.startsWith("-Infinity", i)) token = "-Infinity";
    if (token === undefined) continue;
    out.push(text.slice(last, i), JSON.stringify(`${MARK}${token}`));
    i += token.length - 1;
    last = i + 1;
  }
  if (last === 0) return text;
  out.push(text.slice(last));
  return out.join("");
}

function describeSyntaxError(error: Error, text: string): string {
  const found = locateSyntaxError(text);
  if (found === undefined) return error.message;
  const before = text.slice(0, found.position);
  const line = before.split("\n").length;
  const column = found.position - before.lastIndexOf("\n");
  return `${found.message} at line ${line}, column ${column}`;
}

/**
 * Finds the first syntax error of (Python-flavoured) JSON: V8's messages do not always give a
 * position. Only runs after JSON.parse failed, so simplicity beats speed.
 */
export function locateSyntaxError(text: string): { position: number; message: string } | undefined {
  let i = 0;
  const fail = (message: string): never => {
    throw { position: i, message };
  };
  const space = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const literal = (): boolean => {
    for (const word of ["true", "false", "null", "NaN", "Infinity", "-Infinity"]) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return true;
      }
    }
    return false;
  };
  const string = () => {
    i++; // opening quote
    while (i < text.length && text[i] !== '"') {
      if (text.charCodeAt(i) < 0x20) fail("control character in string");
      i += text[i] === "\\" ? 2 : 1;
    }
    if (i >= text.length) fail("unterminated string");
    i++;
  };
  const value = (): void => {
    space();
    const ch = text[i];
    if (ch === "{") {
      i++;
      space();
      if (text[i] === "}") {
        i++;
        return;
      }
      for (;;) {
        space();
        if (text[i] !== '"') fail("expected a property name in double quotes");
        string();
        space();
        if (text[i] !== ":") fail("expected ':' after property name");
        i++;
        value();
        space();
        if (text[i] === ",") i++;
        else if (text[i] === "}") {
          i++;
          return;
        } else fail("expected ',' or '}' after property value");
      }
    }
    if (ch === "[") {
      i++;
      space();
      if (text[i] === "]") {
        i++;
        return;
      }
      for (;;) {
        value();
        space();
        if (text[i] === ",") i++;
        else if (text[i] === "]") {
          i++;
          return;
        } else fail("expected ',' or ']' after array element");
      }
    }
    if (ch === '"') {
      string();
      return;
    }
    if (literal()) return;
    const number = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 64));
    if (number === null) fail(i >= text.length ? "unexpected end of input" : `unexpected character '${ch}'`);
    i += number![0].length;
  };
  try {
    value();
    space();
    if (i < text.length) fail("unexpected text after the JSON value");
    return undefined;
  } catch (error) {
    return error as { position: number; message: string };
  }
}
