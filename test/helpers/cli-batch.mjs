/**
 * `node test/helpers/cli-batch.mjs '[["data", "list"], …]'`: runs each command line through the built
 * program (dist/, `runLever`, what `lever` runs) in this one process, one after another, and prints a JSON
 * array of `{ status, stdout, stderr }`. For tests whose commands must run in a process of their own
 * (another user, no capabilities) but not each in a process of their own: Node's start-up and loading the
 * program are paid once. What only a real `lever` process shows (its exit code, EPIPE) is tested on one.
 */
import { runLever } from "../../dist/src/cli/program.js";

const results = [];
for (const args of JSON.parse(process.argv[2])) {
  let stdout = "";
  let stderr = "";
  const out = process.stdout.write;
  const err = process.stderr.write;
  process.stdout.write = (chunk) => {
    stdout += String(chunk);
    return true;
  };
  process.stderr.write = (chunk) => {
    stderr += String(chunk);
    return true;
  };
  let status;
  try {
    status = await runLever(args);
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
  results.push({ status, stdout, stderr });
}
process.stdout.write(JSON.stringify(results));
