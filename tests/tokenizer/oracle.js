// The independent oracle for tests/tokenizer/tokenizer_oracle_test.cpp: the Hugging Face Rust
// `tokenizers` library through its npm binding. Reads TOKENIZER_JSON and CORPUS_JSONL (one
// {"name", "text"} object a line) and prints, per line, {"name", "ids", "decoded",
// "decoded_skip", "pieces"}: encode with add_special_tokens, decode without and with
// skip_special_tokens, and the pre-tokenizer's pieces of the raw text (preTokenizeString).
// Usage: node oracle.js NODE_MODULES_PREFIX TOKENIZER_JSON CORPUS_JSONL
const path = require('path');
const fs = require('fs');
const [prefix, tokenizerJson, corpus] = process.argv.slice(2);
const { Tokenizer } = require(path.join(prefix, 'node_modules', 'tokenizers'));
(async () => {
  const tok = Tokenizer.fromFile(tokenizerJson);
  const lines = fs.readFileSync(corpus, 'utf8').split('\n').filter((l) => l.length > 0);
  for (const line of lines) {
    const entry = JSON.parse(line);
    const enc = await tok.encode(entry.text, null, { addSpecialTokens: true });
    const ids = Array.from(enc.getIds());
    const decoded = await tok.decode(ids, false);
    const decodedSkip = await tok.decode(ids, true);
    const pieces = tok.getPreTokenizer().preTokenizeString(entry.text).map((p) => p[0]);
    process.stdout.write(
      JSON.stringify({ name: entry.name, ids, decoded, decoded_skip: decodedSkip, pieces }) + '\n');
  }
})().catch((e) => {
  process.stderr.write(String(e) + '\n');
  process.exit(1);
});
