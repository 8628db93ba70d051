import { describe, expect, it } from "vitest";
import { LeverError } from "../../src/util/errors.js";
import { redactUrlPasswords, splitUrlCredentials } from "../../src/util/redact.js";

describe("passwords in URLs", () => {
  it("are replaced by *** wherever a URL appears in text, user kept; other @ and URLs untouched", () => {
    expect(redactUrlPasswords("at http://me:pw%40x@host:8000/v1 and https://u:p@h, mail a@b.c")).toBe(
      "at http://me:***@host:8000/v1 and https://u:***@h, mail a@b.c",
    );
    expect(redactUrlPasswords("http://host:8000/v1@x")).toBe("http://host:8000/v1@x");
    expect(new LeverError("cannot reach http://u:secret@h:1").message).toBe("cannot reach http://u:***@h:1");
  });

  it("are split off a URL as a basic-auth header", () => {
    expect(splitUrlCredentials("http://me:p%40ss@host:8000/v1")).toEqual({
      url: "http://host:8000/v1",
      authorization: `Basic ${Buffer.from("me:p@ss").toString("base64")}`,
    });
    expect(splitUrlCredentials("http://host:8000")).toEqual({ url: "http://host:8000", authorization: null });
  });
});
