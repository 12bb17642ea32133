/**
 * A strict well-formedness reading of XML documents loopgraph writes (the eval report's JUnit):
 * no XML parser is a dependency, and the documents are simple (no DTD, comments or CDATA).
 */
import { expect } from "vitest";

/** An element of the XML below: its name, attributes (decoded), children and text (decoded). */
export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  text: string;
}

/** XML 1.0's characters: anything else makes a document ill-formed. */
const XML_CHAR = /^[\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]*$/u;
const REFERENCE = /&(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);/g;

function decode(text: string): string {
  expect(text.replace(REFERENCE, ""), "a bare & or <").not.toMatch(/[&<]/);
  const named: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
  return text.replace(REFERENCE, (ref) => {
    const body = ref.slice(1, -1);
    if (body.startsWith("#x")) return String.fromCodePoint(Number.parseInt(body.slice(2), 16));
    if (body.startsWith("#")) return String.fromCodePoint(Number(body.slice(1)));
    return named[body]!;
  });
}

/** A strict reading of the document's well-formedness (no XML parser is installed): one root, tags nested and closed, attributes quoted and unique, references only. */
export function parseXml(document: string): XmlElement {
  expect(XML_CHAR.test(document)).toBe(true);
  const prolog = '<?xml version="1.0" encoding="UTF-8"?>\n';
  expect(document.startsWith(prolog)).toBe(true);
  const token = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_][\w.-]*="[^"<]*")*)\s*(\/?)>|([^<]+)/y;
  token.lastIndex = prolog.length;
  const stack: XmlElement[] = [{ name: "#document", attributes: {}, children: [], text: "" }];
  while (token.lastIndex < document.length) {
    const start = token.lastIndex;
    const match = token.exec(document);
    expect(match, `ill-formed at ${start}: ${document.slice(start, start + 40)}`).not.toBeNull();
    const [, closing, name, attributeText, selfClosing, text] = match!;
    const top = stack[stack.length - 1]!;
    if (text !== undefined) {
      expect(text, "text between tags holds no ]]>").not.toContain("]]>");
      if (stack.length === 1) expect(text.trim()).toBe("");
      top.text += decode(text);
    } else if (closing) {
      expect(top.name).toBe(name);
      stack.pop();
    } else {
      const attributes: Record<string, string> = {};
      for (const [, key, value] of attributeText!.matchAll(/([A-Za-z_][\w.-]*)="([^"]*)"/g)) {
        expect(attributes, `attribute ${key} twice`).not.toHaveProperty(key!);
        attributes[key!] = decode(value!);
      }
      const element = { name: name!, attributes, children: [], text: "" };
      if (stack.length === 1) expect(top.children).toEqual([]);
      top.children.push(element);
      if (!selfClosing) stack.push(element);
    }
  }
  expect(stack.length).toBe(1);
  return stack[0]!.children[0]!;
}
