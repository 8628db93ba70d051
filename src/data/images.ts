import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { type ErrorLocation, LeverError } from "../util/errors.js";
import { pathInside } from "../util/files.js";

/**
 * Image paths of VQA items. A dataset records one path template; each item's path is rendered
 * from it. Placeholders: {split}, {image_id}, {question_id}, optionally zero-padded as
 * {image_id:012}; "{{" and "}}" are literal braces. A rendered path must stay inside the image folder
 * (the folder the template's text before its first placeholder names): an image id such as
 * `../../etc/passwd` is refused, so no file outside it is ever read and sent to a VLM server.
 */
export type ImageSource = { root: string } | { template: string };

export interface ImageIds {
  split: string;
  imageId: string;
  questionId: string;
}

const PLACEHOLDERS = new Set(["split", "image_id", "question_id"]);

function escapeBraces(text: string): string {
  return text.replace(/[{}]/g, (c) => c + c);
}

/**
 * Template for a COCO-style image root: `<root>/<split>2014/COCO_<split>2014_<id:012>.jpg`,
 * or the same file names directly in `<root>` when it has no `<split>2014` folder.
 */
export function cocoTemplate(root: string, split: string): string {
  const absolute = resolve(root);
  if (!existsSync(absolute) || !statSync(absolute).isDirectory()) {
    throw new LeverError("image folder not found", { file: absolute, field: "images" });
  }
  const sub = join(absolute, `${split}2014`);
  const folder = existsSync(sub) && statSync(sub).isDirectory() ? sub : absolute;
  return `${escapeBraces(folder)}/COCO_${split}2014_{image_id:012}.jpg`;
}

/**
 * Template for COCO caption images under `root`, for items whose folders are `folders` ("train2014",
 * "val2014"; one year): `<root>/{split}/COCO_{split}_<id:012>.jpg` for 2014 and
 * `<root>/{split}/<id:012>.jpg` for 2017, where an item's {split} is its folder — or the same file
 * names directly in `<root>` when it lacks one of those folders.
 */
export function cocoCaptionTemplate(root: string, folders: readonly string[]): string {
  const absolute = resolve(root);
  if (!existsSync(absolute) || !statSync(absolute).isDirectory()) {
    throw new LeverError("image folder not found", { file: absolute, field: "images" });
  }
  const years = new Set(folders.map((folder) => /(2014|2017)$/.exec(folder)?.[1] ?? "unknown"));
  if (years.size !== 1 || years.has("unknown"))
    throw new LeverError(`cannot tell COCO image file names from folders ${[...new Set(folders)].join(", ")}`, {
      field: "images",
    });
  const name = years.has("2014") ? "COCO_{split}_{image_id:012}.jpg" : "{image_id:012}.jpg";
  const nested = folders.every((folder) => {
    const sub = join(absolute, folder);
    return existsSync(sub) && statSync(sub).isDirectory();
  });
  return `${escapeBraces(absolute)}/${nested ? "{split}/" : ""}${name}`;
}

/** The template an image source stands for (absolute), or null without images. */
export function imageTemplate(source: ImageSource | undefined, split: string): string | null {
  if (source === undefined) return null;
  if ("root" in source) return cocoTemplate(source.root, split);
  compileImageTemplate(source.template); // validate early, with the user's spelling in the message
  if (isAbsolute(source.template)) return source.template;
  return `${escapeBraces(process.cwd())}/${source.template.replace(/^(\.\/)+/, "")}`;
}

type Part = string | { name: keyof ImageIds; width: number };

/** Renders one item's image path; throws a LeverError (at `where`, field image_id) for a path that leaves the image folder. */
export type ImageRenderer = (ids: ImageIds, where?: ErrorLocation) => string;

/** Parses a template once; the returned function renders a path per item. */
export function compileImageTemplate(template: string): ImageRenderer {
  const parts: Part[] = [];
  let literal = "";
  let usesImage = false;
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if ((c === "{" || c === "}") && template[i + 1] === c) {
      literal += c;
      i++;
      continue;
    }
    if (c === "}") throw templateError(template, `unmatched "}" at character ${i + 1}`);
    if (c !== "{") {
      literal += c;
      continue;
    }
    const end = template.indexOf("}", i);
    if (end < 0) throw templateError(template, `unclosed "{" at character ${i + 1}`);
    const match = /^([a-z_]+)(?::0(\d+))?$/.exec(template.slice(i + 1, end));
    if (match === null || !PLACEHOLDERS.has(match[1])) {
      throw templateError(
        template,
        `unknown placeholder "{${template.slice(i + 1, end)}}" (use {split}, {image_id}, {question_id}, e.g. {image_id:012})`,
      );
    }
    if (literal.length > 0) parts.push(literal);
    literal = "";
    const name = match[1] === "image_id" ? "imageId" : match[1] === "question_id" ? "questionId" : "split";
    usesImage ||= name === "imageId";
    parts.push({ name, width: match[2] === undefined ? 0 : Number(match[2]) });
    i = end;
  }
  if (literal.length > 0) parts.push(literal);
  if (!usesImage) throw templateError(template, "must contain {image_id}, otherwise every item shares one image");
  const folder = imageFolder(typeof parts[0] === "string" ? parts[0] : "");
  return (ids, where) => {
    let out = "";
    for (const part of parts) out += typeof part === "string" ? part : ids[part.name].padStart(part.width, "0");
    if (pathInside(folder, resolve(out)) === null)
      throw new LeverError(
        `image id ${JSON.stringify(ids.imageId)} makes the image path ${out}, which leaves the image folder ${folder}`,
        { ...where, field: "image_id" },
      );
    return out;
  };
}

/** The folder a template's fixed beginning names: up to its last "/" (the whole text when it ends with one). */
function imageFolder(prefix: string): string {
  const cut = prefix.lastIndexOf("/");
  return resolve(cut < 0 ? "." : cut === 0 ? "/" : prefix.slice(0, cut));
}

function templateError(template: string, message: string): LeverError {
  return new LeverError(`image template "${template}": ${message}`, { field: "image-template" });
}

/**
 * Counts the distinct image paths that do not exist (several questions share an image). Each
 * folder is listed once, which is far faster than a stat per item on a COCO-sized folder.
 */
export function findMissingImages(
  paths: Iterable<string | null>,
  maxExamples = 5,
): { checked: number; count: number; examples: string[] } {
  const distinct = new Set<string>();
  for (const path of paths) if (path !== null) distinct.add(path);
  const listings = new Map<string, Set<string>>();
  let count = 0;
  const examples: string[] = [];
  for (const path of distinct) {
    const folder = dirname(path);
    let names = listings.get(folder);
    if (names === undefined) {
      try {
        names = new Set(readdirSync(folder));
      } catch {
        names = new Set();
      }
      listings.set(folder, names);
    }
    if (!names.has(basename(path))) {
      count++;
      if (examples.length < maxExamples) examples.push(path);
    }
  }
  return { checked: distinct.size, count, examples };
}
