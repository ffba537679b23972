import { defineProject } from 'vitest/config';
import { sourceResolution } from '../../vitest.shared.js';

export default defineProject({ ...sourceResolution, test: { name: 'postgres-testkit' } });
