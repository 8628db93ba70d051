/**
 * Short functions: no function in src/ is longer than MAX_FUNCTION_LINES lines. Every function-like
 * node with a body counts (declarations, methods, accessors, constructors, function expressions and
 * arrows, nested ones on their own), from the line of its first token (its signature, after any doc
 * comment) to the line of its last, read with the TypeScript compiler API. A longer function is
 * split into named steps (docs/architecture.md, "Layers and folders"); offenders are listed as
 * `file:line name (N lines)`.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT, SRC, sourceFiles } from "./helpers/source-files.js";

const MAX_FUNCTION_LINES = 100;

/**
 * Functions over the limit for now, each with its reason. Any other fails; a listed one that is no
 * longer over the limit must be removed here.
 */
const KNOWN_LONG: { file: string; name: string; why: string }[] = [];

interface LongFunction {
  file: string;
  /** 1-based line of the function's first token. */
  line: number;
  name: string;
  lines: number;
}

/** The functions of one source text longer than `limit` lines, in source order (outer before inner). */
function longFunctions(file: string, text: string, limit: number): LongFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && (node as Partial<ts.FunctionLikeDeclaration>).body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      const lines = last - first + 1;
      if (lines > limit) found.push({ file, line: first + 1, name: functionName(node), lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Its own name, else the variable or property it is assigned to, else `<anon>`. */
function functionName(node: ts.SignatureDeclaration): string {
  if (node.name !== undefined) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  return "<anon>";
}

const format = (f: LongFunction) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`;

describe("function length", () => {
  it(`keeps every function in src/ within ${MAX_FUNCTION_LINES} lines (except the listed ones)`, () => {
    const offenders = sourceFiles(SRC).flatMap((path) =>
      longFunctions(relative(ROOT, path), readFileSync(path, "utf8"), MAX_FUNCTION_LINES),
    );
    const known = (f: LongFunction) => KNOWN_LONG.some((k) => k.file === f.file && k.name === f.name);
    expect(offenders.filter((f) => !known(f)).map(format)).toEqual([]);
    const stale = KNOWN_LONG.filter((k) => !offenders.some((f) => f.file === k.file && f.name === k.name));
    expect(stale.map((k) => `${k.file} ${k.name}`)).toEqual([]);
  });

  it("counts a function from its signature to its closing line and names it as it is reached", () => {
    const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  step(${i});`).join("\n");
    const text = [
      "/** A doc comment is not counted. */",
      `export function declared(a: number): void {\n${body(4)}\n}`,
      `const arrow = async (x: number) => {\n${body(3)}\n};`,
      `const table = {\n  property: function () {\n${body(4)}\n  },\n};`,
      `class Shape {\n  method(): void {\n${body(5)}\n  }\n}`,
      `run(() => {\n${body(4)}\n});`,
      "const short = () => 1;",
    ].join("\n");
    expect(longFunctions("x.ts", text, 3).map(format)).toEqual([
      "x.ts:2 declared (4 lines)",
      "x.ts:10 property (4 lines)",
      "x.ts:16 method (5 lines)",
      "x.ts:22 <anon> (4 lines)",
    ]);
    expect(longFunctions("x.ts", text, 2).map((f) => f.name)).toEqual([
      "declared",
      "arrow",
      "property",
      "method",
      "<anon>",
    ]);
  });
});
