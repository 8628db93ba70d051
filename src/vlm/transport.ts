/**
 * The HTTP transport: a POST of a body given as chunks (or a GET, for the preflight check), over node:http(s) with keep-alive agents.
 * Measured against the global fetch with the same 670 KB 4-shot bodies, node:http writing the chunks
 * (the cached image literals, never concatenated) cost 2–5× less client CPU per request: undici copies
 * the body (cloneAsUint8Array / extractBody) and runs it through web streams.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

export interface HttpResponse {
  status: number;
  header(name: string): string | undefined;
  text: string;
}

/**
 * POSTs `body` to `url` (GETs it when `body` is null); rejects on connection errors and on `signal`
 * abort (with the signal's reason).
 */
export type Transport = (
  url: string,
  body: readonly Uint8Array[] | null,
  headers: Record<string, string>,
  signal: AbortSignal,
) => Promise<HttpResponse>;

export function nodeHttpTransport(): Transport {
  const agents = {
    "http:": new HttpAgent({ keepAlive: true, scheduling: "lifo" }),
    "https:": new HttpsAgent({ keepAlive: true, scheduling: "lifo" }),
  };
  return (url, body, headers, signal) =>
    new Promise<HttpResponse>((resolve, reject) => {
      signal.throwIfAborted();
      const target = new URL(url);
      const protocol = target.protocol as "http:" | "https:";
      let length = 0;
      for (const chunk of body ?? []) length += chunk.length;
      const send = protocol === "https:" ? httpsRequest : httpRequest;
      const req = send(
        target,
        {
          method: body === null ? "GET" : "POST",
          agent: agents[protocol],
          headers: body === null ? headers : { ...headers, "content-length": String(length) },
          signal,
        },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", (error) => reject(signal.aborted ? signal.reason : error));
          res.on("end", () => {
            const raw = res.headers;
            resolve({
              status: res.statusCode ?? 0,
              header: (name) => {
                const value = raw[name.toLowerCase()];
                return Array.isArray(value) ? value.join(", ") : value;
              },
              text: Buffer.concat(chunks).toString("utf8"),
            });
          });
        },
      );
      req.on("error", (error) => reject(signal.aborted ? signal.reason : error));
      for (const chunk of body ?? []) req.write(chunk);
      req.end();
    });
}
