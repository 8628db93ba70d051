/**
 * Provenance lives in one place, docs/provenance.md, and everything that talks about the Python project
 * points there. The page's opening block (everything before its first `## ` heading) is read as the
 * rule's data: the Python project's repository addresses, the commits described, and the project's
 * top-level folders. So:
 *
 * 1. No file of src/, test/, bench/, examples/, docs/ or README.md but the page names one of those
 *    repositories (owner/name), one of those commits (any prefix of 7 hex digits or more), or a path
 *    inside one of those folders (`lever_lm/…`). File and function names stay welcome.
 * 2. Every src/ file whose COMMENTS mention Lever-Plus or Lever-LM, and every docs page (and README.md)
 *    that mentions them, links the page. Strings are not looked at: help texts, error messages and
 *    on-disk identifiers such as "lever-plus.pointer-selector" are output and never change for this.
 * 3. Every link to an anchor of the page (`provenance.md#…`) names an anchor the page defines, and
 *    every section the page cites (`docs/x.md`, "Heading") is a heading of that page.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const PAGE = "docs/provenance.md";
const MENTION = /Lever-(Plus|LM)/;
const LINK = "provenance.md";

function filesUnder(dir: string, ext: RegExp): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return filesUnder(path, ext);
    return ext.test(name) ? [path] : [];
  });
}

const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

/** The text of every comment of a TypeScript source (strings and template literals excluded). */
function comments(text: string): string {
  const source = ts.createSourceFile("x.ts", text, ts.ScriptTarget.Latest, true);
  const seen = new Map<number, string>();
  const take = (ranges: ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) seen.set(r.pos, text.slice(r.pos, r.end));
  };
  const visit = (node: ts.Node): void => {
    take(ts.getLeadingCommentRanges(text, node.getFullStart()));
    take(ts.getTrailingCommentRanges(text, node.getEnd()));
    if (!ts.isJSDoc(node)) for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return [...seen.values()].join("\n");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces → "-". */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");

function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6} (.+)$/gm)) out.add(slug(m[1]));
  for (const m of markdown.matchAll(/\bid="([^"]+)"/g)) out.add(m[1]);
  return out;
}

const page = read(PAGE);
const opening = page.slice(0, page.indexOf("\n## "));
const repositories = [...opening.matchAll(/https:\/\/github\.com\/([\w.-]+\/[\w.-]+)/g)].map((m) => m[1]);
const commits = [...opening.matchAll(/\b[0-9a-f]{40}\b/g)].map((m) => m[0]);
const folders = [...opening.matchAll(/`([\w.-]+\/)`/g)].map((m) => m[1]);

const scanned = [
  ...["src", "test", "bench", "examples"].flatMap((d) => filesUnder(d, /\.(ts|md|json|py|yaml|yml)$/)),
  ...filesUnder("docs", /\.md$/).filter((f) => f !== PAGE),
  "README.md",
];
const tsSources = filesUnder("src", /\.ts$/);
const docs = [...filesUnder("docs", /\.md$/).filter((f) => f !== PAGE), "README.md"];

/** What a file must not name: the page's repositories, commits and paths in the project's folders. */
function identityLeaks(text: string): string[] {
  const found: string[] = [];
  for (const repo of repositories) if (text.toLowerCase().includes(repo.toLowerCase())) found.push(repo);
  for (const m of text.matchAll(/\b[0-9a-f]{7,40}\b/g))
    if (commits.some((c) => c.startsWith(m[0]))) found.push(`commit ${m[0]}`);
  for (const folder of folders) {
    const at = new RegExp(`(^|[^\\w./-])${folder.replace(/[.]/g, "\\.")}[\\w.*{}/-]+`, "g");
    for (const m of text.matchAll(at)) found.push(m[0].trim());
  }
  return found;
}

describe("docs/provenance.md", () => {
  it("names the Python project's repository, the commit described and the project's folders", () => {
    expect(repositories.length).toBeGreaterThan(0);
    expect(commits.length).toBeGreaterThan(0);
    expect(folders.length).toBeGreaterThan(0);
  });

  it("is the only file naming the repositories, the commits and paths inside the project", () => {
    const leaks = scanned.flatMap((f) => identityLeaks(read(f)).map((what) => `${f}: ${what}`));
    expect(leaks).toEqual([]);
  });

  it("is linked from every src/ file whose comments mention the Python project", () => {
    const missing = tsSources.filter((f) => {
      const text = read(f);
      if (!MENTION.test(text)) return false;
      const c = comments(text);
      return MENTION.test(c) && !c.includes(`docs/${LINK}`);
    });
    expect(missing).toEqual([]);
  });

  it("is linked from every docs page that mentions the Python project", () => {
    const missing = docs.filter((f) => {
      const text = read(f);
      return MENTION.test(text) && !text.includes(LINK);
    });
    expect(missing).toEqual([]);
  });

  it("defines every anchor that is linked, and the sections it cites exist", () => {
    const own = anchors(page);
    const broken: string[] = [];
    for (const f of scanned) {
      for (const m of read(f).matchAll(/provenance\.md#([\w-]+)/g)) if (!own.has(m[1])) broken.push(`${f}: #${m[1]}`);
    }
    for (const m of page.matchAll(/`docs\/([\w-]+\.md)`, ((?:"[^"]+"(?: and |, )?)+)/g)) {
      const titles = new Set([...read(join("docs", m[1])).matchAll(/^#{1,6} (.+)$/gm)].map((h) => h[1].trim()));
      for (const [, title] of m[2].matchAll(/"([^"]+)"/g))
        if (!titles.has(title)) broken.push(`${PAGE}: docs/${m[1]}, "${title}"`);
    }
    expect(broken).toEqual([]);
  });
});

describe("the rule's readers", () => {
  it("read comments, not strings or template literals", () => {
    const source = [
      "/** Lever-Plus A */",
      'const s = "Lever-Plus B // Lever-Plus C";',
      `const t = \`\${s} // Lever-Plus D \${s /* Lever-Plus E */}\`; // Lever-Plus F`,
      "function f() {",
      "  // Lever-Plus G",
      "}",
    ].join("\n");
    const found = [...comments(source).matchAll(/Lever-Plus (\w)/g)].map((m) => m[1]);
    expect(found.sort()).toEqual(["A", "E", "F", "G"]);
  });

  it("catch the page's repositories, commit prefixes and project paths, and nothing else", () => {
    const [repo] = repositories;
    const [commit] = commits;
    const [folder] = folders;
    const text = `see ${repo.toUpperCase()} at ${commit.slice(0, 7)} and ${folder}x/y.py`;
    expect(identityLeaks(text)).toEqual([repo, `commit ${commit.slice(0, 7)}`, `${folder}x/y.py`]);
    const innocent = `"lever-plus.pointer-selector", ${folder.slice(0, -1)}.pointer_selector., bench/${folder}x.py, ${commit.slice(0, 6)}`;
    expect(identityLeaks(innocent)).toEqual([]);
  });
});
