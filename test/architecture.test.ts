/**
 * The import graph of src/, resolved with the TypeScript compiler API (the project's own module
 * resolution, so `../x.js` finds `../x.ts`): no import cycles, src/data is pure (nothing of ours but
 * src/util), and every import follows the layering written in docs/architecture.md — a folder may
 * import its own files and the folders of any lower layer, nothing else. What does not yet comply is
 * listed below, each with its reason (docs/architecture.md lists the same): the known cycles and the
 * layering exceptions. Folders stay small enough to read: no folder's own files exceed 3,000 lines, and
 * src/train is split by concern into layers of its own (the stage's wiring → the objectives → the loop
 * → the training data), each importing only its own and lower ones.
 */
import { readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT, SRC, sourceFiles } from "./helpers/source-files.js";

/**
 * Imports that cross the layering, and why: `from` is a file, or a folder ending in "/" (any of its
 * files), `to` is the file imported (paths under src/). Any other crossing fails; an exception that
 * no longer happens must be removed here (and from the docs).
 */
const EXCEPTIONS: { from: string; to: string; why: string }[] = [];

const excepted = (e: Edge) =>
  EXCEPTIONS.filter((x) => e.to === x.to && (x.from.endsWith("/") ? e.from.startsWith(x.from) : e.from === x.from));

/**
 * Import cycles that exist on purpose or await a fix, each as its sorted files, and why. Any other
 * cycle fails; a listed one that disappears must be removed here.
 */
const KNOWN_CYCLES: { files: string[]; why: string }[] = [];

interface Edge {
  from: string;
  to: string;
}

function compilerOptions(): ts.CompilerOptions {
  const file = join(ROOT, "tsconfig.json");
  const { config, error } = ts.readConfigFile(file, ts.sys.readFile);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, "\n"));
  return ts.parseJsonConfigFileContent(config, ts.sys, ROOT).options;
}

/** Every import (static, type-only, re-export, dynamic) of every src/ file: our files, and package names. */
function importGraph(): { files: string[]; edges: Edge[]; packages: Map<string, Set<string>> } {
  const options = compilerOptions();
  const files = sourceFiles(SRC).map((f) => relative(SRC, f));
  const edges: Edge[] = [];
  const packages = new Map<string, Set<string>>();
  for (const file of files) {
    const path = join(SRC, file);
    const { importedFiles } = ts.preProcessFile(readFileSync(path, "utf8"), true, true);
    for (const { fileName: specifier } of importedFiles) {
      if (!specifier.startsWith(".")) {
        if (!packages.has(file)) packages.set(file, new Set());
        packages.get(file)!.add(specifier);
        continue;
      }
      const resolved = ts.resolveModuleName(specifier, path, options, ts.sys).resolvedModule;
      if (resolved === undefined) throw new Error(`${file}: cannot resolve "${specifier}"`);
      edges.push({ from: file, to: relative(SRC, resolved.resolvedFileName) });
    }
  }
  return { files, edges, packages };
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
function cycles(files: string[], edges: Edge[]): string[][] {
  const next = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const e of edges) next.get(e.from)?.push(e.to);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let counter = 0;
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (next.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return found;
}

/** The layering line of docs/architecture.md: `cli → config → (a, b) → … → util`, top layer first. */
function documentedLayers(): string[][] {
  const doc = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");
  const line = doc.split("\n").find((l) => /^\s*cli → /.test(l));
  if (line === undefined) throw new Error("docs/architecture.md has no `cli → … → util` layering line");
  return line
    .trim()
    .replace(/^`|`$/g, "")
    .split("→")
    .map((layer) =>
      layer
        .replace(/[()]/g, "")
        .split(",")
        .map((name) => name.trim()),
    );
}

/** The most lines a folder's own .ts files (not its subfolders') may hold together. */
const MAX_FOLDER_LINES = 3000;

/**
 * src/train's concern folders, top first (docs/architecture.md, "The training folder"): a folder may
 * import its own files and those of the concerns after it, so the maths never reaches into the loop's
 * callers or the workspace, and the loop knows no objective.
 */
const TRAIN_CONCERNS = ["stage", "objective", "loop", "data"];

/** The concern folder of a src/train file ("." for a file directly in src/train), or null outside it. */
const trainConcernOf = (file: string) => {
  const parts = file.split("/");
  if (parts[0] !== "train") return null;
  return parts.length > 2 ? parts[1] : ".";
};

const linesOf = (file: string) => {
  const text = readFileSync(join(SRC, file), "utf8");
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
};

/** Folders (under src/) whose own files hold more than `max` lines, as "folder: N lines". */
function oversizedFolders(files: readonly string[], max: number): string[] {
  const lines = new Map<string, number>();
  for (const file of files) {
    const folder = dirname(file);
    lines.set(folder, (lines.get(folder) ?? 0) + linesOf(file));
  }
  return [...lines].filter(([, n]) => n > max).map(([folder, n]) => `src/${folder}: ${n} lines`);
}

/** Imports between src/train's concern folders that run upward (or out of a concern), as "from → to". */
function trainLayerViolations(edges: readonly Edge[]): string[] {
  const rank = (concern: string) => TRAIN_CONCERNS.indexOf(concern);
  return edges
    .filter((e) => {
      const from = trainConcernOf(e.from);
      const to = trainConcernOf(e.to);
      return from !== null && to !== null && from !== to && !(rank(to) > rank(from) && rank(from) >= 0);
    })
    .map((e) => `${e.from} → ${e.to}`);
}

const folderOf = (file: string) => (file.includes("/") ? file.slice(0, file.indexOf("/")) : ".");

const graph = importGraph();

describe("the import graph of src/", () => {
  it("has no import cycle (except the listed ones)", () => {
    const found = cycles(graph.files, graph.edges).map((c) => c.join(" ↔ "));
    const known = KNOWN_CYCLES.map((c) => [...c.files].sort().join(" ↔ "));
    expect(found.filter((c) => !known.includes(c))).toEqual([]);
    expect(known.filter((c) => !found.includes(c))).toEqual([]);
  });

  it("has no folder-level import cycle (a folder reaching itself through other folders)", () => {
    const folders = [...new Set(graph.files.map(folderOf))];
    const folderEdges = graph.edges
      .map((e) => ({ from: folderOf(e.from), to: folderOf(e.to) }))
      .filter((e) => e.from !== e.to);
    expect(cycles(folders, folderEdges).map((c) => c.join(" ↔ "))).toEqual([]);
  });

  it("keeps src/data pure: it imports only src/data, src/util, Node built-ins and zod", () => {
    const fromData = graph.edges.filter((e) => folderOf(e.from) === "data");
    expect(fromData.length).toBeGreaterThan(0);
    expect(fromData.filter((e) => !["data", "util"].includes(folderOf(e.to)))).toEqual([]);
    const allowed = (name: string) => name === "zod" || name.startsWith("node:") || builtinModules.includes(name);
    const packages = [...graph.packages].filter(([file]) => folderOf(file) === "data");
    expect(
      packages.flatMap(([file, names]) => [...names].filter((n) => !allowed(n)).map((n) => `${file}: ${n}`)),
    ).toEqual([]);
  });

  const layers = documentedLayers();
  const layerOf = new Map(layers.flatMap((names, depth) => names.map((name) => [name, depth] as const)));

  it("places every src/ folder in the documented layering", () => {
    const folders = [...new Set(graph.files.map(folderOf))].sort();
    expect(folders.filter((f) => !layerOf.has(f))).toEqual([]);
    expect(layers.flat()).toContain("data");
  });

  it("imports only downward in the documented layering (cli → config → … → util), except the listed exceptions", () => {
    const violations = graph.edges.filter((e) => {
      const from = folderOf(e.from);
      const to = folderOf(e.to);
      return from !== to && !(layerOf.get(to)! > layerOf.get(from)!);
    });
    expect(violations.filter((e) => excepted(e).length === 0).map((e) => `${e.from} → ${e.to}`)).toEqual([]);
    const used = new Set(violations.flatMap(excepted));
    expect(EXCEPTIONS.filter((x) => !used.has(x)).map((x) => `${x.from} → ${x.to}`)).toEqual([]);
  });

  it("lists the same exceptions and cycles in docs/architecture.md (one line naming their files each)", () => {
    const lines = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8").split("\n");
    const named = (files: string[]) => lines.some((line) => files.every((f) => line.includes(`src/${f}`)));
    expect(EXCEPTIONS.filter((x) => !named([x.from, x.to])).map((x) => `${x.from} → ${x.to}`)).toEqual([]);
    expect(KNOWN_CYCLES.filter((c) => !named(c.files)).map((c) => c.files.join(" ↔ "))).toEqual([]);
  });

  it("is described folder by folder, with no folder missing or extra, in README's Layout and docs/architecture.md", () => {
    const folders = [...new Set(graph.files.map(folderOf))].sort();
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const layout = readme.slice(readme.indexOf("## Layout"));
    const named = [...layout.matchAll(/`([a-z]+)\/`/g)].map((m) => m[1]);
    expect([...new Set(named.filter((n) => !["src", "native", "test", "bench"].includes(n)))].sort()).toEqual(folders);
    const doc = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");
    const table = [...doc.matchAll(/^\| `src\/([a-z]+)\/` \|/gm)].map((m) => m[1]);
    expect([...table].sort()).toEqual(folders);
  });
});

describe("the size and concerns of src/ folders", () => {
  it(`keeps every folder's own files within ${MAX_FOLDER_LINES} lines`, () => {
    expect(oversizedFolders(graph.files, MAX_FOLDER_LINES)).toEqual([]);
  });

  it("finds an oversized folder (the check is real)", () => {
    expect(oversizedFolders(graph.files, 100)).toContain(
      `src/train/stage: ${graph.files.filter((f) => f.startsWith("train/stage/")).reduce((n, f) => n + linesOf(f), 0)} lines`,
    );
  });

  it("keeps src/train by concern: every file in one of its concern folders, each importing only its own and lower ones", () => {
    const concerns = [...new Set(graph.files.map(trainConcernOf).filter((c) => c !== null))].sort();
    expect(concerns).toEqual([...TRAIN_CONCERNS].sort());
    expect(trainLayerViolations(graph.edges)).toEqual([]);
    const doc = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");
    const line = TRAIN_CONCERNS.map((c) => `train/${c}`).join(" → ");
    expect(doc.includes(line), `docs/architecture.md names the concerns in order: ${line}`).toBe(true);
  });

  it("finds an import running up src/train's concerns, or out of them (the check is real)", () => {
    const edges = [
      { from: "train/objective/grpo.ts", to: "train/stage/rl-settings.ts" },
      { from: "train/loop/loop.ts", to: "train/objective/rce.ts" },
      { from: "train/data/groups.ts", to: "train/loop/batch.ts" },
      { from: "train/stray.ts", to: "train/data/groups.ts" },
      { from: "train/stage/rl-stage.ts", to: "train/objective/grpo.ts" },
      { from: "train/stage/rl-stage.ts", to: "store/workspace.ts" },
    ];
    expect(trainLayerViolations(edges)).toEqual([
      "train/objective/grpo.ts → train/stage/rl-settings.ts",
      "train/loop/loop.ts → train/objective/rce.ts",
      "train/data/groups.ts → train/loop/batch.ts",
      "train/stray.ts → train/data/groups.ts",
    ]);
  });
});
