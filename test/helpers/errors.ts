import { expect } from "vitest";
import { LeverError } from "../../src/util/errors.js";

/** Runs `fn`, which must throw a LeverError, and returns it so the test can check message, file, record and field. */
export function leverErrorOf(fn: () => unknown): LeverError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(LeverError);
    return error as LeverError;
  }
  throw new Error("expected an error");
}
