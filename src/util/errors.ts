import { redactUrlPasswords } from "./redact.js";

/**
 * The one error type users see. It names where the problem is (file, record, field) so a
 * one-line message is enough to fix the input. The CLI prints `error: <message>` and exits 2
 * (an InterruptedError: `interrupted: <message>`, exit 130). A password in a URL it quotes is shown
 * as `***` (src/util/redact.ts).
 */
export interface ErrorLocation {
  file?: string;
  record?: string | number;
  field?: string;
}

export class LeverError extends Error {
  readonly location: ErrorLocation;
  constructor(message: string, location: ErrorLocation = {}) {
    super(formatMessage(message, location));
    this.name = "LeverError";
    this.location = location;
  }
}

function formatMessage(message: string, { file, record, field }: ErrorLocation): string {
  const where = [
    file !== undefined ? file : null,
    record !== undefined ? `record ${JSON.stringify(String(record))}` : null,
    field !== undefined ? `field "${field}"` : null,
  ].filter((part) => part !== null);
  return redactUrlPasswords(where.length > 0 ? `${where.join(", ")}: ${message}` : message);
}

/**
 * Work stopped by Ctrl-C (SIGINT) after storing what it finished: the message says what was kept and
 * how to resume. The CLI prints `interrupted: <message>` and exits 130 (the shell's code for SIGINT).
 */
export class InterruptedError extends LeverError {
  constructor(message: string, location: ErrorLocation = {}) {
    super(message, location);
    this.name = "InterruptedError";
  }
}

/** Throws a LeverError unless `condition` holds. */
export function check(condition: unknown, message: string, location?: ErrorLocation): asserts condition {
  if (!condition) throw new LeverError(message, location);
}
