#!/usr/bin/env node
/**
 * The `lever` executable: runs the program and sets the exit code. When the reader of stdout goes
 * away (`lever status | head`), the output is no longer wanted: `lever` stops quietly with exit 0
 * instead of an unhandled EPIPE stack trace.
 */
import { runLever } from "./program.js";

for (const stream of [process.stdout, process.stderr])
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });

runLever(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
