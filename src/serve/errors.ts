/**
 * HTTP errors of `lever serve`, in OpenAI's error format `{"error": {"message", "type", "param", "code"}}`:
 * one clear line, never a stack trace. They are `LeverError`s (the one error type users see) with a status.
 */
import { LeverError } from "../util/errors.js";

export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "not_found_error"
  | "rate_limit_error"
  | "server_error"
  | "upstream_error"
  | "timeout_error";

export class HttpError extends LeverError {
  constructor(
    readonly status: number,
    message: string,
    readonly type: ErrorType = status >= 500 ? "server_error" : "invalid_request_error",
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** The status and OpenAI-format body of any error: an HttpError as it is, anything else a 500 with its first line. */
export function errorResponse(error: unknown): { status: number; body: { error: Record<string, unknown> } } {
  if (error instanceof HttpError)
    return {
      status: error.status,
      body: { error: { message: error.message, type: error.type, param: error.param, code: error.code } },
    };
  const first = (error instanceof Error ? error.message : String(error)).split("\n")[0];
  const status = error instanceof LeverError ? 400 : 500;
  return {
    status,
    body: {
      error: {
        message: status === 400 ? first : `internal error: ${first}`,
        type: status === 400 ? "invalid_request_error" : "server_error",
        param: null,
        code: null,
      },
    },
  };
}
