import type { Command } from "commander";
import * as cache from "./cache.js";
import * as captions from "./captions.js";
import * as data from "./data.js";
import * as datagen from "./datagen.js";
import * as doctor from "./doctor.js";
import * as embed from "./embed.js";
import * as evaluation from "./eval.js";
import * as formats from "./formats.js";
import * as metric from "./metric.js";
import * as pools from "./pools.js";
import * as report from "./report.js";
import * as run from "./run.js";
import * as selector from "./selector.js";
import * as serve from "./serve.js";
import * as status from "./status.js";
import * as synth from "./synth.js";
import * as train from "./train.js";

/** Every command group registers itself here; one file per group under src/cli/. */
export function registerCommands(program: Command): void {
  for (const module of [
    run,
    status,
    data,
    captions,
    synth,
    formats,
    embed,
    metric,
    pools,
    datagen,
    selector,
    train,
    evaluation,
    serve,
    report,
    cache,
    doctor,
  ]) {
    module.register(program);
  }
}
