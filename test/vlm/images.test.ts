import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ImageError, ImageStore, imageMime } from "../../src/vlm/images.js";

let dir: string;
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4, 5]); // 9 bytes → 12 base64 chars

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "lever-images-"));
  for (const name of ["a.jpg", "b.jpg", "c.jpg"]) writeFileSync(join(dir, name), JPEG);
  writeFileSync(join(dir, "p.jpg"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a]));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ref = (name: string) => ({ questionId: name, path: join(dir, name) });

describe("ImageStore (data URLs)", () => {
  it("returns a base64 data URL with the MIME type sniffed from the bytes", async () => {
    const store = new ImageStore("data");
    expect(await store.url(ref("a.jpg"))).toBe(`data:image/jpeg;base64,${JPEG.toString("base64")}`);
    expect(await store.url(ref("p.jpg"))).toMatch(/^data:image\/png;base64,/); // extension says jpg, bytes say PNG
  });

  it("reads each file once while it stays in the cache", async () => {
    const store = new ImageStore("data");
    await Promise.all([store.url(ref("a.jpg")), store.url(ref("a.jpg"))]);
    await store.url(ref("a.jpg"));
    expect(store.stats()).toMatchObject({ reads: 1, entries: 1 });
  });

  it("evicts the least recently used URL when the byte budget is exceeded", async () => {
    const size = `"data:image/jpeg;base64,${JPEG.toString("base64")}"`.length; // stored as a JSON literal
    const store = new ImageStore("data", 2 * size);
    await store.url(ref("a.jpg"));
    await store.url(ref("b.jpg"));
    await store.url(ref("a.jpg")); // a is now the most recent
    await store.url(ref("c.jpg")); // evicts b
    expect(store.stats()).toMatchObject({ entries: 2, bytes: 2 * size, reads: 3 });
    await store.url(ref("a.jpg"));
    expect(store.stats().reads).toBe(3);
    await store.url(ref("b.jpg"));
    expect(store.stats().reads).toBe(4);
  });

  it("throws an ImageError naming the question and the path of a missing file", async () => {
    const store = new ImageStore("data");
    await expect(store.url({ questionId: "123", path: join(dir, "missing.jpg") })).rejects.toThrow(ImageError);
    await expect(store.url({ questionId: "123", path: join(dir, "missing.jpg") })).rejects.toThrow(
      /question "123" .*missing\.jpg \(ENOENT\)/,
    );
  });
});

describe("ImageStore (file URLs)", () => {
  it("returns an absolute file:// URL and still reports missing files", async () => {
    const store = new ImageStore("file");
    expect(await store.url(ref("a.jpg"))).toBe(`file://${join(dir, "a.jpg")}`);
    await expect(store.url(ref("zzz.jpg"))).rejects.toThrow(/zzz\.jpg/);
  });
});

describe("imageMime", () => {
  it("recognises GIF and WEBP magic and falls back to the extension", () => {
    expect(imageMime(Buffer.from("GIF89a"), "x")).toBe("image/gif");
    expect(imageMime(Buffer.from("RIFF\0\0\0\0WEBPVP8 "), "x")).toBe("image/webp");
    expect(imageMime(Buffer.from([0, 0, 0]), "x.png")).toBe("image/png");
    expect(imageMime(Buffer.from([0, 0, 0]), "x.unknown")).toBe("image/jpeg");
  });
});
