/**
 * SIGTERM as an operator sends it: the built CLI (dist/) serves, is sent SIGTERM while requests are in
 * flight, answers every one of them, then exits 0 without a stack trace.
 */
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MockVllm } from "../helpers/mock-vllm.js";
import { chatBody, post, type ServeFixture, serveWorkspace } from "./fixture.js";

const CLI = resolve("dist/src/cli/main.js");
let f: ServeFixture;
let mock: MockVllm;

beforeAll(async () => {
  f = serveWorkspace();
  mock = await MockVllm.start({ latencyMs: 500 });
});
afterAll(async () => {
  await mock.close();
  f.sim.ws.close();
});

describe("lever serve and SIGTERM", () => {
  it("finishes the requests in flight, then exits 0", async () => {
    const args = ["--workspace", join(f.sim.dir, "ws"), "serve", "--checkpoint", f.checkpoint, "--index", "train"];
    args.push("--vlm", "openai", "--base-url", mock.url, "--model", "mock-vl", "--client-embeddings", "--port", "0");
    args.push("--shots", "2", "--concurrency-per-endpoint", "32");
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    const url = await new Promise<string>((done, fail) => {
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /listening on (http:\/\/\S+)/.exec(stderr);
        if (match) done(match[1]);
      });
      child.on("exit", (code) => fail(new Error(`lever serve exited ${code}: ${stderr}`)));
    });
    const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
    const items = f.sim.ws.loadItems("val").slice(0, 16);
    const replies = Promise.all(items.map((item) => post(`${url}/v1/chat/completions`, chatBody(f, item))));
    for (let waited = 0; mock.inFlight < 16 && waited < 5_000; waited += 10)
      await new Promise((done) => setTimeout(done, 10));
    expect(mock.inFlight).toBe(16);
    child.kill("SIGTERM");
    const statuses = (await replies).map((r) => r.status);
    expect(statuses).toEqual(new Array(16).fill(200));
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/SIGTERM: finishing 16 request\(s\) in flight/);
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});
