/**
 * `lever data import-captions`: a caption dataset from the official COCO caption files or Karpathy's
 * `dataset_coco.json` (src/store/ingest/captions.ts). Flags come from `CaptionImportSettingsSchema`.
 */
import type { Command } from "commander";
import { CaptionImportSettingsSchema, importCaptions } from "../store/ingest/captions.js";
import { demonstrationReferences } from "../task/caption-reference.js";
import { group, printJson, workspaceDir } from "./common.js";
import { bindSettings, resolve } from "./options.js";

export function register(program: Command): void {
  const data = group(program, "data", "datasets: import, inspect, list");
  const command = data
    .command("import-captions")
    .description("import a caption split (one item per image with all its references) from COCO or Karpathy files")
    .option("--json", "print the result as JSON");
  const settings = bindSettings(command, CaptionImportSettingsSchema, { fileOption: "config" });
  command.action((flags: { json?: boolean }, cmd: Command) => {
    const s = resolve(cmd, settings);
    const result = importCaptions(workspaceDir(cmd), s, demonstrationReferences);
    if (flags.json) {
      printJson(result);
      return;
    }
    const { record, references } = result;
    const lines = [
      `imported "${record.name}": ${record.itemCount} caption items (task caption, ${record.source}, split ${record.split}; ${result.totalImages} images in the file's split${record.subset ? `, subset ${record.subset.spec}` : ""})`,
      `  references per image: ${references.min}–${references.max}, ${references.total} in all`,
      record.images === null
        ? "  images: none given (imagePath is null)"
        : `  images: ${record.images}; missing: ${result.missingImages ?? 0}`,
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
  });
}
