/**
 * Mermaid, built as a script of its own (`assets/mermaid.js`, most of the inspector's bytes): the
 * page loads it when it first draws a graph, so a thread's steps show before it is even fetched.
 */
export { default } from "mermaid";
