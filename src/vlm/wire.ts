/**
 * Request bodies as bytes. A 4-shot prompt carries ~5 × 130 KB of base64; running JSON.stringify and
 * then UTF-8 encoding over it cost ~10 ms per request, more than everything else in the client. So
 * the messages are serialised with each image URL replaced by its pre-encoded JSON literal, spliced
 * in as bytes (`ImageStore.jsonUrl`), and the body goes to the transport as chunks (never concatenated).
 */
import type { ChatMessage, ContentPart } from "./layouts.js";

/**
 * Serialises `{...fields, messages}`. In image parts, `image_url.url` is a key of `imageJson` whose
 * value is the URL's JSON string literal (quotes included).
 */
export function serializeChatBody(
  fields: Record<string, unknown>,
  messages: ChatMessage[],
  imageJson: Map<string, Buffer>,
): Buffer[] {
  if ("messages" in fields) throw new Error("serializeChatBody: messages belong in the messages argument");
  const chunks: Buffer[] = [];
  let text = '{"messages":[';
  const flush = () => {
    chunks.push(Buffer.from(text, "utf8"));
    text = "";
  };
  messages.forEach((message, m) => {
    if (m > 0) text += ",";
    if (typeof message.content === "string") {
      text += JSON.stringify(message);
      return;
    }
    text += `{"role":${JSON.stringify(message.role)},"content":[`;
    message.content.forEach((part: ContentPart, p) => {
      if (p > 0) text += ",";
      if (part.type === "text") {
        text += JSON.stringify(part);
        return;
      }
      const literal = imageJson.get(part.image_url.url);
      if (literal === undefined) throw new Error(`serializeChatBody: no URL for image key ${part.image_url.url}`);
      text += '{"type":"image_url","image_url":{"url":';
      flush();
      chunks.push(literal);
      text += "}}";
    });
    text += "]}";
  });
  text += "]";
  const rest = JSON.stringify(fields);
  text += rest === "{}" ? "}" : `,${rest.slice(1)}`;
  flush();
  return chunks;
}
