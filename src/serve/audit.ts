/**
 * The optional audit log (`--audit-log FILE`): one JSON line per chat or select request, answered or
 * failed — time, route, status, the question, the image's sha256 and size (never its bytes), the shot
 * count, the demonstrations' question ids in prompt order, the selector checkpoint's hash and the
 * post-processed answer; a failed request has its error message and whatever was known when it failed
 * (a request the upstream failed keeps its demonstrations; a malformed one has only the error).
 */
import { createWriteStream, type WriteStream } from "node:fs";

export interface AuditEntry {
  time: string;
  route: string;
  status: number;
  question?: string;
  image?: { sha256: string; bytes: number };
  shots?: number;
  demonstrations?: string[];
  checkpoint?: string;
  answer?: string | null;
  error?: string;
  ms: number;
}

export class AuditLog {
  private readonly stream: WriteStream;

  constructor(readonly file: string) {
    this.stream = createWriteStream(file, { flags: "a" });
    this.stream.on("error", (error) => {
      process.stderr.write(`warning: audit log ${file}: ${error.message}\n`);
    });
  }

  write(entry: AuditEntry): void {
    this.stream.write(`${JSON.stringify(entry)}\n`);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.stream.end(() => resolve()));
  }
}
