/**
 * Passwords in URLs (`http://user:secret@host`, e.g. a `--base-url` behind basic auth) are never
 * stored or shown: `redactUrlPasswords` replaces each with `***`. The workspace applies it to what it
 * stores (run configs, stage records), `LeverError` to every message, and the OpenAI client sends the
 * credentials as a header while every URL it names in a message has none.
 */

/** `scheme://user:password@` → `scheme://user:***@`, everywhere in `text`. */
export function redactUrlPasswords(text: string): string {
  return text.includes("@") ? text.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@]*):[^\s/@]*@/gi, "$1:***@") : text;
}

/** A URL without its user and password, and the basic-auth header value they stand for (null without). */
export function splitUrlCredentials(url: string): { url: string; authorization: string | null } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url, authorization: null };
  }
  if (parsed.username === "" && parsed.password === "") return { url, authorization: null };
  const user = decodeURIComponent(parsed.username);
  const password = decodeURIComponent(parsed.password);
  parsed.username = "";
  parsed.password = "";
  return { url: parsed.href, authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` };
}
