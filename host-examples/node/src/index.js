// The lakesweep planner component in Node: a plan over a local or S3
// table, and the serverless page handler with its coordinator.
export { deltaHead, describe, plan, planner, PlanRefused, referencedWith, sessionConfig } from './planner.js';
export { apply } from './apply.js';
export { LocalStore } from './local.js';
export { S3Store, parseS3 } from './s3.js';
export { coordinate, deleteHandler, handler } from './serverless.js';
