import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../src/vlm/layouts.js";
import { serializeChatBody } from "../../src/vlm/wire.js";

describe("serializeChatBody", () => {
  it("produces the same JSON as JSON.stringify with the image URLs substituted", () => {
    const messages: ChatMessage[] = [
      { role: "system", content: 'Say "hi"\n' },
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "/a.jpg" } },
          { type: "text", text: "Question:é? Short answer:" },
          { type: "image_url", image_url: { url: "/b.jpg" } },
        ],
      },
      { role: "assistant", content: "two" },
    ];
    const urls = new Map([
      ["/a.jpg", Buffer.from('"data:image/jpeg;base64,AAAA"')],
      ["/b.jpg", Buffer.from(JSON.stringify("file:///b%20c.jpg"))],
    ]);
    const fields = { model: "m", max_tokens: 5, extra: { nested: [1, null] } };
    const body = Buffer.concat(serializeChatBody(fields, messages, urls));
    const expected = {
      messages: [
        messages[0],
        {
          role: "user",
          content: [
            { type: "image_url", image_url: { url: "data:image/jpeg;base64,AAAA" } },
            { type: "text", text: "Question:é? Short answer:" },
            { type: "image_url", image_url: { url: "file:///b%20c.jpg" } },
          ],
        },
        messages[2],
      ],
      ...fields,
    };
    expect(JSON.parse(body.toString("utf8"))).toEqual(expected);
    expect(body.toString("utf8")).toBe(JSON.stringify(expected));
  });

  it("handles empty extra fields and refuses an image without a URL", () => {
    const messages: ChatMessage[] = [{ role: "user", content: [{ type: "text", text: "x" }] }];
    expect(JSON.parse(Buffer.concat(serializeChatBody({}, messages, new Map())).toString())).toEqual({ messages });
    const withImage: ChatMessage[] = [{ role: "user", content: [{ type: "image_url", image_url: { url: "k" } }] }];
    expect(() => serializeChatBody({}, withImage, new Map())).toThrow(/no URL for image key k/);
  });
});
