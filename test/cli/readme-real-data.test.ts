/**
 * README's "Real data with vLLM" commands, run as written against the mock vLLM server on a tiny
 * synthetic world in the official file format, so a line that cannot run (a flag the CLI rejects, a
 * name never made, a stage left on the simulator) fails here. The commands are read from README.md in
 * its order — the code block (line continuations joined, comments dropped, its `for` loop expanded)
 * and then the prose chain's backticked `lever …` spans — and only what cannot hold on this machine
 * is changed, by the tables below: file paths, the server's URL, sizes, and the `…` placeholders; and
 * each runs in a workspace in a temporary folder (`--workspace`) instead of ./lever-workspace. The mock
 * serves the model the README names, so the VLM lines' `--model` is run as written.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Workspace } from "../../src/store/workspace.js";
import { TINY_CLIP_DIR } from "../embed/tiny-clip.js";
import { runCli, runCliOk } from "../helpers/cli.js";
import { MockVllm } from "../helpers/mock-vllm.js";

const README = readFileSync("README.md", "utf8");
const SECTION = README.slice(README.indexOf("## Real data"), README.indexOf("\n## ", README.indexOf("## Real data")));

/** Backticked `lever …` spans of the section's prose that are not run here, and why. */
const NOT_RUN: Record<string, string> = {
  "lever run examples/okvqa-vllm.yaml":
    "the whole chain as an experiment file; test/examples.test.ts loads and plans it",
  "lever selector import-torch": "a command's name in a sentence (it needs a PyTorch export), not a command line",
};

/**
 * The code block's lines as commands: `\` continuations joined, comments dropped,
 * `for V in A B; do … done` expanded.
 */
function codeBlockCommands(): string[] {
  const block = /```sh\n([\s\S]*?)```/.exec(SECTION);
  if (block === null) throw new Error('README\'s "## Real data" section has no ```sh block');
  const lines = block[1]
    .replace(/\\\n\s*/g, "")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  const commands: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const loop = /^for (\w+) in ([^;]+); do$/.exec(lines[i]);
    if (loop === null) {
      commands.push(lines[i]);
      continue;
    }
    const end = lines.indexOf("done", i);
    if (end < 0) throw new Error(`README: a for loop without done: ${lines[i]}`);
    const body = lines.slice(i + 1, end);
    for (const value of loop[2].trim().split(/\s+/))
      commands.push(...body.map((l) => l.replaceAll(`$${loop[1]}`, value)));
    i = end;
  }
  for (const c of commands) if (!c.startsWith("lever ")) throw new Error(`README: not a lever command: ${c}`);
  return commands;
}

/** The prose after the code block (up to the next code block): its backticked `lever …` spans, in order. */
function proseSpans(): string[] {
  const after = SECTION.slice(SECTION.indexOf("```", SECTION.indexOf("```sh") + 5) + 3);
  const prose = after.slice(0, after.indexOf("```"));
  return [...prose.matchAll(/`(lever [^`]+)`/g)].map((m) => m[1].replace(/\s+/g, " ").trim());
}

/**
 * A command's arguments after `lever`; shell syntax this reader does not expand (quotes, variables, pipes)
 * is refused.
 */
function tokens(command: string): string[] {
  if (/['"$|;&<>()]/.test(command)) throw new Error(`README: shell syntax this test cannot run as written: ${command}`);
  return command.split(/\s+/).slice(1);
}
const flag = (args: string[], name: string) => {
  const at = args.indexOf(name);
  return at < 0 ? undefined : args[at + 1];
};

const CODE = codeBlockCommands().map(tokens);
const PROSE = proseSpans()
  .filter((c) => !(c in NOT_RUN))
  .map(tokens);
/**
 * The code block's evaluation on the server: its flags fill the prose's `lever eval …`, its server flags
 * the `…` after `--vlm openai`.
 */
const SERVER_EVAL = CODE.find((args) => args[0] === "eval" && flag(args, "--vlm") === "openai");
const SERVER_URL = SERVER_EVAL === undefined ? undefined : flag(SERVER_EVAL, "--base-url");
const SERVED_MODEL = SERVER_EVAL === undefined ? undefined : flag(SERVER_EVAL, "--model");

let root: string;
let synth: string;
let mock: MockVllm;

/**
 * What changes to run a README command here, each with its reason: an argument matching `from` (after the
 * flag `after`, when given) becomes `to`. An argument no rule matches is passed as written.
 */
interface Substitution {
  after?: string;
  from: RegExp;
  to: (arg: string) => string;
  why: string;
}
const SUBSTITUTIONS: Substitution[] = [
  {
    from: /^(OpenEnded_mscoco|mscoco)_(train|val)2014_(questions|annotations)\.json$/,
    to: (arg) => join(synth, `v2_${arg}`),
    why: "the official files are not here: `lever data synth` writes the same JSON format under VQAv2's names (v2_…)",
  },
  {
    after: "--images",
    from: /^\/data\/coco$/,
    to: () => join(synth, "images"),
    why: "the COCO root: the synthetic world's images/ (train2014/, val2014/)",
  },
  {
    after: "--model",
    from: /^models\/clip-vit-(large-patch14|base-patch32)$/,
    to: () => TINY_CLIP_DIR,
    why: "the CLIP ONNX exports are not here: the tiny CLIP fixture has their layout (config, tokenizer, onnx/)",
  },
  {
    after: "--base-url",
    from: /^http:\/\/localhost:8000$/,
    to: () => mock.url,
    why: "the mock server's URL (a free port)",
  },
  { after: "--queries", from: /^first:800$/, to: () => "first:8", why: "size: 8 of the 12 synthetic val questions" },
  {
    after: "--anchors",
    from: /^random:800$/,
    to: () => "random:4",
    why: "size: 4 beam anchors of the 16 train questions",
  },
  { after: "--shots", from: /^1,2,3,4$/, to: () => "1,2", why: "size: two shot counts instead of four" },
  { after: "--k", from: /^32$/, to: () => "8", why: "size: 8-candidate pools (the name train-k32 is kept as written)" },
];

/**
 * Flags added to a README command, each with its reason: only sizes. The README lines train for the
 * default epochs (SFT 20, RCE and GRPO 5), and each epoch of the default model writes its checkpoint and
 * optimiser state (about half a second here); two epochs still validate after each epoch.
 */
const ADDITIONS: { command: string; flags: string[]; why: string }[] = [
  { command: "train sft", flags: ["--epochs", "2"], why: "size: 2 of the default 20 epochs" },
  { command: "train rce", flags: ["--epochs", "2"], why: "size: 2 of the default 5 epochs, each validated by the VLM" },
  {
    command: "train grpo",
    flags: ["--epochs", "2"],
    why: "size: 2 of the default 5 epochs, each validated by the VLM",
  },
];

/**
 * `…` after `--vlm openai`: the code block's server flags (URL and model); in `lever eval …`: the code
 * block's evaluation (its flags but --retriever); elsewhere nothing (flags left at their defaults).
 */
function fillEllipses(args: string[]): string[] {
  return args.flatMap((arg, i) => {
    if (arg !== "…") return [arg];
    if (args[0] === "eval") {
      const flags = SERVER_EVAL!.slice(1);
      const at = flags.indexOf("--retriever");
      return at < 0 ? flags : [...flags.slice(0, at), ...flags.slice(at + 2)];
    }
    if (args[i - 2] === "--vlm" && args[i - 1] === "openai")
      return ["--base-url", SERVER_URL!, "--model", SERVED_MODEL!];
    return [];
  });
}

function runnable(args: string[]): string[] {
  const filled = fillEllipses(args);
  const substituted = filled.map((arg, i) => {
    const rule = SUBSTITUTIONS.find((r) => (r.after === undefined || filled[i - 1] === r.after) && r.from.test(arg));
    return rule === undefined ? arg : rule.to(arg);
  });
  const added = ADDITIONS.filter((a) => args.join(" ").startsWith(`${a.command} `)).flatMap((a) => a.flags);
  return [...substituted, ...added];
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "lever-readme-real-"));
  synth = join(root, "synth");
  mock = await MockVllm.start({ model: SERVED_MODEL });
  await runCliOk(["data", "synth", "--items", "16", "--val-items", "12", "--concepts", "6", "--out", synth]);
});

afterAll(async () => {
  await mock?.close();
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
});

describe("README's real-data commands against the mock vLLM server", () => {
  it("reads the code block and the prose chain in README order", () => {
    expect(SERVER_URL).toBe("http://localhost:8000");
    expect(SERVED_MODEL).toBeDefined();
    const verb = (args: string[]) => args.slice(0, ["data", "embed", "train"].includes(args[0]) ? 2 : 1).join(" ");
    expect([...CODE, ...PROSE].map(verb)).toEqual([
      "data import",
      "data import",
      ...Array(6).fill("embed compute"),
      "eval",
      "pools",
      "beams",
      "train sft",
      "rollouts",
      "train rce",
      "train grpo",
      "eval",
    ]);
  });

  it("changes nothing by a stale rule: every substitution and addition applies to some README command", () => {
    const filled = [...CODE, ...PROSE].map(fillEllipses);
    const applies = (r: Substitution) =>
      filled.some((args) => args.some((a, i) => (r.after === undefined || args[i - 1] === r.after) && r.from.test(a)));
    expect(SUBSTITUTIONS.filter((r) => !applies(r)).map((r) => r.why)).toEqual([]);
    const verbs = filled.map((args) => args.join(" "));
    expect(Object.keys(NOT_RUN).filter((c) => !proseSpans().includes(c))).toEqual([]);
    expect(ADDITIONS.filter((a) => !verbs.some((v) => v.startsWith(`${a.command} `))).map((a) => a.why)).toEqual([]);
  });

  it("each exits 0; each stage that needs the VLM asks the server; RCE and GRPO validate with it and say so", async () => {
    const ws = join(root, "ws");
    for (const args of [...CODE, ...PROSE]) {
      const argv = runnable(args);
      const before = mock.requests;
      const result = await runCli(["--workspace", ws, ...argv]);
      const shown = `lever ${argv.join(" ")}\n${result.stderr}`;
      expect(result.code, shown).toBe(0);
      if (["eval", "beams", "rollouts"].includes(argv[0]) || ["rce", "grpo"].includes(argv[1]))
        expect(mock.requests, `no request reached the server: ${shown}`).toBeGreaterThan(before);
      if (argv[0] === "train" && ["rce", "grpo"].includes(argv[1]))
        expect(result.stderr, shown).toContain(`note: validation answers come from the openai VLM`);
    }
    const open = Workspace.open(ws, { create: false });
    try {
      for (const kind of ["rce", "grpo"] as const) {
        const [run] = open.listRuns({ kind });
        expect((run.config as { vlm: { vlm: string } | null }).vlm?.vlm, kind).toBe("openai");
      }
    } finally {
      open.close();
    }
  });
});
