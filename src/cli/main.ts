#!/usr/bin/env node
import { runLever } from "./program.js";

runLever(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
