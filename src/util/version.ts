/**
 * Which `lever` made an output: the package's version (package.json beside the build) and, when it
 * runs from a git checkout, the commit (with "-dirty" when tracked files differ from it). Reports state
 * it so a result can be traced to the code that produced it; `lever --version` prints the package
 * version alone (`packageVersion`, no git). Read once per process; a missing git, a
 * copy outside a checkout or a slow git all give commit null, never an error.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface LeverVersion {
  /** package.json's version, e.g. "0.1.0". */
  version: string;
  /** The checkout's commit (40 hex digits, "-dirty" appended with local changes), null outside git. */
  commit: string | null;
}

let cached: LeverVersion | null = null;

/** The package root: the nearest folder above this file holding package.json (src/ and dist/src/ alike). */
function packageRoot(): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "package.json"))) return dir;
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

function git(root: string, args: string[]): string | null {
  try {
    return execFileSync("git", ["-C", root, ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 5000,
    }).trim();
  } catch {
    return null;
  }
}

let cachedPackage: string | null = null;

/** package.json's version ("unknown" when it cannot be read): what `lever --version` prints. */
export function packageVersion(): string {
  if (cachedPackage !== null) return cachedPackage;
  const root = packageRoot();
  let version = "unknown";
  if (root !== null) {
    try {
      const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version?: unknown };
      if (typeof pkg.version === "string") version = pkg.version;
    } catch {
      // an unreadable package.json leaves "unknown"
    }
  }
  cachedPackage = version;
  return version;
}

export function leverVersion(): LeverVersion {
  if (cached !== null) return cached;
  const root = packageRoot();
  let commit: string | null = null;
  if (root !== null) {
    const head = git(root, ["rev-parse", "--verify", "HEAD"]);
    if (head !== null && /^[0-9a-f]{40}$/.test(head)) {
      const changes = git(root, ["status", "--porcelain", "--untracked-files=no"]);
      commit = changes === null || changes === "" ? head : `${head}-dirty`;
    }
  }
  cached = { version: packageVersion(), commit };
  return cached;
}
