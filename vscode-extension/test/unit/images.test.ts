/** Images pasted or dropped into the chat input: checked as the server checks them, and sent with the question. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { askArguments } from "../../src/args";
import { imageFromDataUrl, imageProblem, MAX_IMAGE_BYTES } from "../../src/webview/composer";

const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex").toString("base64");

test("a PNG read as a data URL becomes the image elelem.ask takes", () => {
  assert.deepEqual(imageFromDataUrl("shot.png", `data:image/png;base64,${PNG}`), { mimeType: "image/png", data: PNG });
});

test("a type no provider takes is refused naming the file", () => {
  assert.equal(imageProblem("scan.bmp", "image/bmp", 10), "scan.bmp is not a PNG, JPEG, GIF or WebP image");
  assert.equal(imageProblem("", "text/plain", 10), "the pasted item is not a PNG, JPEG, GIF or WebP image");
  assert.throws(() => imageFromDataUrl("notes.txt", "data:text/plain;base64,aGk="), /notes.txt is not a PNG, JPEG, GIF or WebP image/);
  assert.throws(() => imageFromDataUrl("shot.png", "data:image/png,raw"), /shot.png could not be read as an image/);
});

test("an image larger than a provider takes is refused with its size and the limit", () => {
  assert.equal(imageProblem("big.jpg", "image/jpeg", MAX_IMAGE_BYTES), undefined);
  assert.equal(imageProblem("big.jpg", "image/jpeg", 5 * 1024 * 1024), "big.jpg is 5.00 MiB, more than the 3.75 MiB a provider takes");
  const large = Buffer.alloc(MAX_IMAGE_BYTES + 3).toString("base64");
  assert.throws(() => imageFromDataUrl("big.webp", `data:image/webp;base64,${large}`), /big.webp is 3.75 MiB, more than the 3.75 MiB/);
});

test("the images go in elelem.ask's arguments, and none leaves the argument out", () => {
  const images = [{ mimeType: "image/png", data: PNG }];
  assert.deepEqual(askArguments({ prompt: "what is this?", images }, "tok-1"), { prompt: "what is this?", images, progressToken: "tok-1" });
  assert.deepEqual(askArguments({ prompt: "hi", images: [] }, "tok-2"), { prompt: "hi", progressToken: "tok-2" });
});
