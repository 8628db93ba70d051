/**
 * Image URLs for chat requests. `data` mode inlines the file as base64 (works with every server);
 * `file` mode sends `file:///abs/path` (vLLM started with `--allowed-local-media-path`, no upload).
 * Data URLs are read once and kept in an LRU bounded by bytes, because beam search and rollouts show
 * the same few thousand demonstration images over and over.
 */
import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { ImageRef } from "./layouts.js";

export type ImageUrlMode = "data" | "file";

/** A missing or unreadable image: the request fails with this message, naming question and path. */
export class ImageError extends Error {
  constructor(
    readonly ref: ImageRef,
    cause: string,
  ) {
    super(`image for question ${JSON.stringify(ref.questionId)} cannot be read: ${ref.path} (${cause})`);
    this.name = "ImageError";
  }
}

export interface ImageStoreStats {
  entries: number;
  bytes: number;
  hits: number;
  reads: number;
}

export class ImageStore {
  private readonly cache = new Map<string, Buffer>();
  private readonly pending = new Map<string, Promise<Buffer>>();
  private readonly known = new Set<string>();
  private bytes = 0;
  private hits = 0;
  private reads = 0;

  constructor(
    readonly mode: ImageUrlMode,
    readonly maxBytes: number = 512 * 1024 * 1024,
  ) {}

  /**
   * The URL as a JSON string literal (quotes included), ready to splice into a request body: a
   * JSON.stringify of ~1 MB of base64 per prompt was the client's main cost, and base64 needs no
   * escaping. Throws ImageError when the file is missing or unreadable.
   */
  async jsonUrl(ref: ImageRef): Promise<Buffer> {
    return this.mode === "file" ? this.fileUrl(ref) : this.dataUrl(ref);
  }

  /** The URL as a plain string. */
  async url(ref: ImageRef): Promise<string> {
    return JSON.parse((await this.jsonUrl(ref)).toString("utf8")) as string;
  }

  stats(): ImageStoreStats {
    return { entries: this.cache.size, bytes: this.bytes, hits: this.hits, reads: this.reads };
  }

  private async fileUrl(ref: ImageRef): Promise<Buffer> {
    const absolute = resolve(ref.path);
    if (!this.known.has(absolute)) {
      try {
        const info = await stat(absolute);
        if (!info.isFile()) throw new Error("not a regular file");
      } catch (error) {
        throw new ImageError(ref, describe(error));
      }
      this.known.add(absolute);
    }
    return Buffer.from(JSON.stringify(pathToFileURL(absolute).href), "utf8");
  }

  private dataUrl(ref: ImageRef): Promise<Buffer> {
    const key = resolve(ref.path);
    const cached = this.cache.get(key);
    if (cached !== undefined) {
      this.hits++;
      this.cache.delete(key); // re-insert: Map order is the LRU order
      this.cache.set(key, cached);
      return Promise.resolve(cached);
    }
    const inFlight = this.pending.get(key);
    if (inFlight !== undefined) return inFlight;
    const read = this.read(ref, key).finally(() => this.pending.delete(key));
    this.pending.set(key, read);
    return read;
  }

  private async read(ref: ImageRef, key: string): Promise<Buffer> {
    let bytes: Buffer;
    try {
      bytes = await readFile(key);
    } catch (error) {
      throw new ImageError(ref, describe(error));
    }
    this.reads++;
    const url = Buffer.from(`"data:${imageMime(bytes, key)};base64,${bytes.toString("base64")}"`, "latin1");
    if (url.length <= this.maxBytes) {
      this.cache.set(key, url);
      this.bytes += url.length;
      for (const [oldKey, oldUrl] of this.cache) {
        if (this.bytes <= this.maxBytes) break;
        this.cache.delete(oldKey);
        this.bytes -= oldUrl.length;
      }
    }
    return url;
  }
}

/** MIME type from the file's magic bytes (extensions lie), falling back to the extension. */
export function imageMime(bytes: Uint8Array, path: string): string {
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  if (bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47) return "image/png";
  if (bytes[0] === 0x47 && bytes[1] === 0x49 && bytes[2] === 0x46) return "image/gif";
  if (ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 12) === "WEBP") return "image/webp";
  if (bytes[0] === 0x42 && bytes[1] === 0x4d) return "image/bmp";
  const ext = path.toLowerCase().split(".").pop();
  if (ext === "png") return "image/png";
  if (ext === "gif") return "image/gif";
  if (ext === "webp") return "image/webp";
  if (ext === "bmp") return "image/bmp";
  return "image/jpeg";
}

function ascii(bytes: Uint8Array, start: number, end: number): string {
  return String.fromCharCode(...bytes.subarray(start, end));
}

function describe(error: unknown): string {
  if (error && typeof error === "object" && "code" in error && typeof error.code === "string") return error.code;
  return error instanceof Error ? error.message : String(error);
}
