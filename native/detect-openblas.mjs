// Prints the path of the system OpenBLAS shared library (Debian: libopenblas0 / libopenblas-dev),
// or nothing. Used by binding.gyp at configure time; LEVER_OPENBLAS=0 skips it.
import { existsSync } from "node:fs";

const dirs = [
  "/usr/lib/x86_64-linux-gnu",
  "/usr/lib/aarch64-linux-gnu",
  "/usr/lib64",
  "/usr/lib",
  "/usr/local/lib",
  "/opt/OpenBLAS/lib",
  "/opt/homebrew/opt/openblas/lib",
  "/usr/local/opt/openblas/lib",
];
const names = ["libopenblas.so.0", "libopenblas.so", "libopenblas.dylib"];

let found = "";
if (process.env.LEVER_OPENBLAS !== "0") {
  outer: for (const dir of dirs) {
    for (const name of names) {
      if (existsSync(`${dir}/${name}`)) {
        found = `${dir}/${name}`;
        break outer;
      }
    }
  }
}
process.stdout.write(found);
