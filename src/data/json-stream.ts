import { createHash, type Hash } from "node:crypto";
import { closeSync, openSync, readSync } from "node:fs";
import { LeverError } from "../util/errors.js";
import { firstInvalidUtf8, systemError } from "../util/files.js";

/**
 * Streams one large array out of a JSON file shaped `{ ..., "<field>": [ e0, e1, ... ], ... }`,
 * handing each element to a callback as soon as it is parsed. Memory stays bounded by the largest
 * element (the official VQAv2 annotations file is ~330 MB, which `JSON.parse` of the whole text
 * would hold several times over). Every byte is still validated as JSON: structure by the scanner
 * below, element and other-field contents by `JSON.parse`. The file's sha256 is computed on the way.
 */
export interface StreamedJsonFile {
  /** The other top-level fields (info, license, …), parsed. */
  others: Record<string, unknown>;
  /** Number of elements handed to the callback. */
  count: number;
  sha256: string;
  bytes: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const EOF = -1;
/** Strict: a byte sequence that is not UTF-8 is an error, never a replacement character. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

function describeByte(b: number): string {
  return b === EOF ? "end of file" : JSON.stringify(String.fromCharCode(b));
}

/** 1-based line and column of a byte offset (only computed on the error path). */
export function lineColumnAt(file: string, offset: number): { line: number; column: number } {
  const fd = openSync(file, "r");
  const chunk = Buffer.allocUnsafe(1 << 20);
  let line = 1;
  let lineStart = 0;
  let read = 0;
  try {
    while (read < offset) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, offset - read), read);
      if (n === 0) break;
      for (let i = 0; i < n; i++) {
        if (chunk[i] === 0x0a) {
          line++;
          lineStart = read + i + 1;
        }
      }
      read += n;
    }
  } finally {
    closeSync(fd);
  }
  return { line, column: offset - lineStart + 1 };
}

/** A growable window over the file; `pos` is the scan position inside `buf`. */
class Window {
  buf: Buffer;
  len = 0;
  /** Absolute file offset of buf[0]. */
  base = 0;
  pos = 0;
  eof = false;
  bytes = 0;
  private readonly hash: Hash = createHash("sha256");

  constructor(
    private readonly fd: number,
    chunkBytes: number,
  ) {
    this.buf = Buffer.allocUnsafe(chunkBytes);
  }

  /**
   * Drops the bytes before `keep` (shifting `pos` down by `keep`) and reads more.
   * Returns false at end of file.
   */
  refill(keep: number): boolean {
    if (keep > 0) {
      this.buf.copyWithin(0, keep, this.len);
      this.len -= keep;
      this.base += keep;
      this.pos -= keep;
    }
    if (this.eof) return false;
    if (this.len === this.buf.length) {
      const bigger = Buffer.allocUnsafe(this.buf.length * 2);
      this.buf.copy(bigger, 0, 0, this.len);
      this.buf = bigger;
    }
    const n = readSync(this.fd, this.buf, this.len, this.buf.length - this.len, null);
    if (n === 0) {
      this.eof = true;
      return false;
    }
    this.hash.update(this.buf.subarray(this.len, this.len + n));
    this.len += n;
    this.bytes += n;
    return true;
  }

  digest(): string {
    return this.hash.digest("hex");
  }
}

class Scanner {
  private readonly w: Window;

  constructor(
    private readonly file: string,
    fd: number,
    chunkBytes: number,
  ) {
    this.w = new Window(fd, chunkBytes);
  }

  /** Throws a LeverError at an absolute byte offset (`exact` false: the offset where the bad value starts). */
  fail(message: string, offset: number, record?: string, exact = true): never {
    const { line, column } = lineColumnAt(this.file, offset);
    const where = exact ? "at" : "in the value starting at";
    throw new LeverError(`invalid JSON ${where} byte ${offset} (line ${line}, column ${column}): ${message}`, {
      file: this.file,
      record,
    });
  }

  /** Absolute offset of the scan position. */
  get offset(): number {
    return this.w.base + this.w.pos;
  }

  skipBom(): void {
    const w = this.w;
    while (w.len - w.pos < 3 && w.refill(w.pos)) {}
    if (w.len - w.pos >= 3 && w.buf[w.pos] === 0xef && w.buf[w.pos + 1] === 0xbb && w.buf[w.pos + 2] === 0xbf) {
      w.pos += 3;
    }
  }

  /** Skips whitespace and returns the next byte without consuming it (EOF at the end). */
  peek(): number {
    const w = this.w;
    for (;;) {
      while (w.pos < w.len && isSpace(w.buf[w.pos])) w.pos++;
      if (w.pos < w.len) return w.buf[w.pos];
      if (!w.refill(w.pos)) return EOF;
    }
  }

  expect(byte: number, what: string, record?: string): void {
    const b = this.peek();
    if (b !== byte) this.fail(`expected ${what}, found ${describeByte(b)}`, this.offset, record);
    this.w.pos++;
  }

  consume(): void {
    this.w.pos++;
  }

  /**
   * Finds the extent of the JSON value starting at the next non-space byte and returns its text.
   * Only the structure needed to find the end is checked here; JSON.parse checks the rest.
   */
  valueText(record?: string): { text: string; start: number } {
    const w = this.w;
    const first = this.peek();
    if (first === EOF) this.fail("unexpected end of file, expected a value", this.offset, record);
    let start = w.pos;
    let i = start + 1;
    const more = (): boolean => {
      w.pos = i;
      const ok = w.refill(start);
      i = w.pos;
      start = 0;
      return ok;
    };
    if (first === QUOTE || first === OPEN_OBJECT || first === OPEN_ARRAY) {
      let depth = first === QUOTE ? 0 : 1;
      let inString = first === QUOTE;
      let escaped = false;
      for (;;) {
        if (i >= w.len && !more()) this.fail("unexpected end of file inside a value", w.base + start, record);
        const buf = w.buf;
        const len = w.len;
        let done = false;
        while (i < len) {
          const b = buf[i++];
          if (inString) {
            if (escaped) escaped = false;
            else if (b === BACKSLASH) escaped = true;
            else if (b === QUOTE) {
              inString = false;
              if (depth === 0) {
                done = true;
                break;
              }
            }
          } else if (b === QUOTE) inString = true;
          else if (b === OPEN_OBJECT || b === OPEN_ARRAY) depth++;
          else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
            if (--depth === 0) {
              done = true;
              break;
            }
          }
        }
        if (done) break;
      }
    } else {
      // number, true, false, null (or garbage that JSON.parse will name)
      for (;;) {
        while (i < w.len) {
          const b = w.buf[i];
          if (isSpace(b) || b === COMMA || b === CLOSE_OBJECT || b === CLOSE_ARRAY || b === COLON) break;
          i++;
        }
        if (i < w.len || !more()) break;
      }
    }
    w.pos = i;
    const bytes = w.buf.subarray(start, i);
    try {
      return { text: UTF8.decode(bytes), start: w.base + start };
    } catch {
      const offset = w.base + start + firstInvalidUtf8(bytes);
      const { line, column } = lineColumnAt(this.file, offset);
      throw new LeverError(`not valid UTF-8 at byte ${offset} (line ${line}, column ${column})`, {
        file: this.file,
        record,
      });
    }
  }

  /** Parses the next value; a syntax error reports its absolute byte offset. */
  parseValue(record?: string): unknown {
    const { text, start } = this.valueText(record);
    try {
      return JSON.parse(text);
    } catch (error) {
      const message = (error as Error).message;
      // V8 gives a position for most errors ("... in JSON at position 7"), not for unexpected tokens.
      const at = /position (\d+)/.exec(message);
      if (at === null) return this.fail(message, start, record, false);
      const offset = start + Buffer.byteLength(text.slice(0, Number(at[1])), "utf8");
      return this.fail(message.replace(/ in JSON at position \d+.*$/, ""), offset, record);
    }
  }

  finish(): { sha256: string; bytes: number } {
    while (this.w.refill(this.w.len)) {}
    return { sha256: this.w.digest(), bytes: this.w.bytes };
  }
}

export function streamJsonArrayField(
  file: string,
  field: string,
  onElement: (value: unknown, index: number) => void,
  options: { chunkBytes?: number } = {},
): StreamedJsonFile {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch (error) {
    throw systemError(error, file);
  }
  try {
    const s = new Scanner(file, fd, options.chunkBytes ?? 1 << 22);
    s.skipBom();
    s.expect(OPEN_OBJECT, `a JSON object with a "${field}" array`);
    const others: Record<string, unknown> = {};
    let count = -1;
    if (s.peek() === CLOSE_OBJECT) s.consume();
    else {
      for (;;) {
        if (s.peek() !== QUOTE) s.fail(`expected a field name, found ${describeByte(s.peek())}`, s.offset);
        const key = s.parseValue() as string;
        s.expect(COLON, '":"', key);
        if (key === field) {
          if (count >= 0) s.fail(`field "${field}" appears twice`, s.offset, key);
          count = streamArray(s, field, onElement);
        } else {
          others[key] = s.parseValue(key);
        }
        const next = s.peek();
        if (next === COMMA) s.consume();
        else if (next === CLOSE_OBJECT) {
          s.consume();
          break;
        } else s.fail(`expected "," or "}" after field "${key}", found ${describeByte(next)}`, s.offset, key);
      }
    }
    if (s.peek() !== EOF) s.fail("unexpected data after the end of the top-level object", s.offset);
    if (count < 0) {
      const present = Object.keys(others);
      throw new LeverError(
        `missing top-level array "${field}" (fields present: ${present.length > 0 ? present.join(", ") : "none"})`,
        { file, field },
      );
    }
    return { others, count, ...s.finish() };
  } catch (error) {
    throw systemError(error, file); // e.g. a directory given as the file (EISDIR on read)
  } finally {
    closeSync(fd);
  }
}

function streamArray(s: Scanner, field: string, onElement: (value: unknown, index: number) => void): number {
  if (s.peek() !== OPEN_ARRAY) s.fail(`field "${field}" must be an array, found ${describeByte(s.peek())}`, s.offset);
  s.consume();
  let index = 0;
  if (s.peek() === CLOSE_ARRAY) {
    s.consume();
    return 0;
  }
  for (;;) {
    const record = `${field}[${index}]`;
    onElement(s.parseValue(record), index);
    index++;
    const next = s.peek();
    if (next === COMMA) s.consume();
    else if (next === CLOSE_ARRAY) {
      s.consume();
      return index;
    } else s.fail(`expected "," or "]" after ${record}, found ${describeByte(next)}`, s.offset, record);
  }
}
