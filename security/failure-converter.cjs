// Failure messages and stack traces move into the failure's encoded attributes, a payload the encryption codec
// encrypts, so an activity error that quotes a conversation does not reach Temporal's history in plaintext.
// Plain JavaScript because the SDK require()s it by path, in the worker's and the client's own thread (where no
// TypeScript loader may be installed) and in the workflow bundle.
const { DefaultFailureConverter } = require('@temporalio/common');

exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
