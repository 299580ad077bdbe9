import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { policySample } from './policy/sample.js';

/** The committed sample; a unit spec fails when it differs from the code's defaults. */
const SAMPLE_FILE = join(__dirname, '..', 'docs', 'policy.yaml.sample');

/** `npm run policy:sample`: the default rules with their descriptions, commented out. */
writeFileSync(SAMPLE_FILE, policySample());
process.stdout.write(`wrote ${SAMPLE_FILE}\n`);
