/**
 * Settings files (`--config FILE`, `--vlm-config FILE`, experiment files): JSON or YAML (by
 * extension; `.yaml`/`.yml` through the `yaml` package, which keeps node positions), read strictly as
 * UTF-8. `locate(path)` gives the 1-based line of a key so validation errors can name it. A YAML file
 * whose aliases expand more than MAX_YAML_ALIASES times is refused (one LeverError naming the file).
 */
import { isMap, isSeq, LineCounter, parseDocument } from "yaml";
import { LeverError } from "../util/errors.js";
import { readTextFile } from "../util/files.js";

export interface SettingsFile {
  file: string;
  value: unknown;
  /** Line (1-based) of the key or item at `path`, or of its nearest existing parent; undefined for JSON. */
  locate(path: readonly PropertyKey[]): number | undefined;
}

export function isYamlFile(path: string): boolean {
  return /\.ya?ml$/i.test(path);
}

export function readSettingsFile(file: string): SettingsFile {
  const text = readTextFile(file);
  if (!isYamlFile(file)) {
    try {
      return { file, value: JSON.parse(text), locate: () => undefined };
    } catch (error) {
      throw new LeverError(`not valid JSON (${(error as Error).message})`, { file });
    }
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const error = doc.errors[0];
    const line = lines.linePos(error.pos[0]).line;
    throw new LeverError(`not valid YAML at line ${line} (${error.message.split("\n")[0]})`, { file });
  }
  const locate = (path: readonly PropertyKey[]): number | undefined => {
    let node: unknown = doc.contents;
    let offset: number | undefined = (doc.contents as { range?: [number] } | null)?.range?.[0];
    for (const key of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => String((p.key as { value?: unknown } | null)?.value) === String(key));
        if (pair === undefined) break;
        offset = (pair.key as { range?: [number] }).range?.[0] ?? offset;
        node = pair.value;
      } else if (isSeq(node) && typeof key === "number" && node.items[key] !== undefined) {
        node = node.items[key];
        offset = (node as { range?: [number] }).range?.[0] ?? offset;
      } else break;
    }
    return offset === undefined ? undefined : lines.linePos(offset).line;
  };
  return { file, value: yamlValue(doc, file), locate };
}

/** At most this many alias expansions: a file of nested aliases ("billion laughs") is refused, not expanded. */
export const MAX_YAML_ALIASES = 100;

function yamlValue(doc: ReturnType<typeof parseDocument>, file: string): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_YAML_ALIASES });
  } catch (error) {
    // The yaml package throws a ReferenceError for an alias that expands too far (or is unknown).
    throw new LeverError(
      `YAML aliases expand too far or cannot be resolved (${(error as Error).message}; at most ${MAX_YAML_ALIASES} alias expansions)`,
      { file },
    );
  }
}
