import type { Command } from "commander";
import { parseServeOptions, ServeSettingsSchema } from "../serve/options.js";
import { startServer } from "../serve/server.js";
import { prepareServe } from "../serve/startup.js";
import { VlmSettingsSchema } from "../vlm/settings.js";
import { withWorkspace } from "./common.js";
import { bindSettings, resolve } from "./options.js";

/** Registers `lever serve` (docs/serve.md). */
export function register(program: Command): void {
  const command = program
    .command("serve")
    .description(
      "serve a trained selector in front of a VLM server as an OpenAI-compatible endpoint: each request's demonstrations are chosen as lever eval chooses them, the prompt is evaluation's, the answer comes back with the demonstrations (docs/serve.md)",
    );
  const serveSettings = bindSettings(command, ServeSettingsSchema, { fileOption: "config" });
  const vlmSettings = bindSettings(command, VlmSettingsSchema, {
    fileOption: "vlm-config",
    fileHelp: "VLM backend settings file (JSON or YAML): any of the backend settings; flags override it",
  });
  command.action(async (_flags: unknown, cmd: Command) => {
    const options = parseServeOptions({ ...resolve(cmd, serveSettings), ...resolve(cmd, vlmSettings) });
    await withWorkspace(
      cmd,
      async (ws) => {
        const setup = await prepareServe(ws, options);
        for (const note of setup.notes) process.stderr.write(`note: ${note}\n`);
        const app = await startServer(setup);
        process.stderr.write(
          `lever serve: listening on ${app.url} (model ${setup.upstream.model}, checkpoint ${setup.checkpoint.hash}); SIGTERM or Ctrl-C stops after the requests in flight\n`,
        );
        // Requests never touch the workspace after start-up; it stays open (read-only use) until the stop.
        const signal = await new Promise<string>((done) => {
          process.once("SIGTERM", () => done("SIGTERM"));
          process.once("SIGINT", () => done("SIGINT"));
        });
        process.stderr.write(`lever serve: ${signal}: finishing ${app.inFlight()} request(s) in flight\n`);
        await app.close();
        process.stderr.write("lever serve: stopped\n");
      },
      { readOnly: true },
    );
  });
}
