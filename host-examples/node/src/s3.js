// S3 and S3-compatible stores through the AWS SDK for JavaScript. Keys are
// the bucket's bytes: listings ask for `encoding-type=url` (XML cannot
// carry every key) and are decoded only when the answer says it was
// encoded; nothing else is decoded or normalised. `s3a://` and `s3n://`
// URIs name the same objects as `s3://`; listed keys keep the scheme the
// planner asked with.

import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';

/// `s3://bucket/key` (also `s3a://`, `s3n://`) as {scheme, bucket, key}.
export function parseS3(uri) {
  const m = /^(s3|s3a|s3n):\/\/([^/]+)(?:\/(.*))?$/.exec(uri);
  if (!m) throw new Error(`${uri}: not an s3:// URI`);
  return { scheme: m[1], bucket: m[2], key: m[3] || '' };
}

/// A key as S3 returned it under `encoding-type=url` (`+` is a space).
export function decodeKey(k) {
  return decodeURIComponent(k.replace(/\+/g, ' '));
}

export class S3Store {
  /// `client`: an S3Client (default: the SDK's configuration from the
  /// environment); `pointer`: async () => the metadata location now.
  constructor({ client, pointer = async () => null } = {}) {
    this.client = client || new S3Client({});
    this.pointerFn = pointer;
  }

  async read(uri) {
    const { bucket, key } = parseS3(uri);
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return new Uint8Array(await r.Body.transformToByteArray());
    } catch (e) {
      // Missing means no such key; a missing bucket is an error, never "missing".
      if (e.name === 'NoSuchKey' || (e.$metadata?.httpStatusCode === 404 && e.name !== 'NoSuchBucket')) return null;
      throw new Error(`read ${uri}: ${e.name}: ${e.message}`);
    }
  }

  /// One ListObjectsV2 page under `prefix` (a URI): the listed objects and
  /// the continuation token of the next page (null after the last).
  async listPage(prefix, { continuationToken, maxKeys = 1000, delimiter } = {}) {
    const { scheme, bucket, key } = parseS3(prefix);
    const r = await this.client.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: key,
        ContinuationToken: continuationToken,
        MaxKeys: maxKeys,
        Delimiter: delimiter,
        EncodingType: 'url',
      }),
    );
    const encoded = r.EncodingType === 'url';
    const name = (k) => (encoded ? decodeKey(k) : k);
    if (r.IsTruncated && !r.NextContinuationToken) {
      throw new Error(`list ${prefix}: the store says more keys follow but gives no continuation token (nothing planned)`);
    }
    const objects = (r.Contents || []).map((o) => {
      if (o.Size === undefined || !o.LastModified) {
        throw new Error(`list ${prefix}: ${o.Key} came without its size or time (nothing planned)`);
      }
      return {
        key: `${scheme}://${bucket}/${name(o.Key)}`,
        version: {
          size: BigInt(o.Size),
          lastModifiedMs: BigInt(o.LastModified.getTime()),
          etag: o.ETag,
        },
      };
    });
    const folders = (r.CommonPrefixes || []).map((p) => `${scheme}://${bucket}/${name(p.Prefix)}`);
    return { objects, folders, next: r.IsTruncated ? r.NextContinuationToken : null };
  }

  /// Every object under `prefix`, page by page.
  async *list(prefix) {
    let token;
    do {
      const page = await this.listPage(prefix, { continuationToken: token });
      yield page.objects;
      token = page.next;
    } while (token);
  }

  /// Writes an object (a keep set, a plan).
  async write(uri, bytes) {
    const { bucket, key } = parseS3(uri);
    await this.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }));
  }

  async pointer() {
    return this.pointerFn();
  }

  /// S3's HEAD gives entity tags: a plan's pinned ETag can be checked.
  get givesEtags() {
    return true;
  }

  /// The object's version, or null when there is none.
  async head(uri) {
    const { bucket, key } = parseS3(uri);
    try {
      const r = await this.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      return {
        size: BigInt(r.ContentLength ?? 0),
        lastModifiedMs: BigInt(r.LastModified.getTime()),
        etag: r.ETag,
        versionId: r.VersionId,
      };
    } catch (e) {
      if (e.name === 'NotFound' || e.name === 'NoSuchKey' || (e.$metadata?.httpStatusCode === 404 && e.name !== 'NoSuchBucket')) return null;
      throw new Error(`HEAD ${uri}: ${e.name}: ${e.message}`);
    }
  }

  /// Deletes the object once, while its ETag is still `ifMatch` (when
  /// given): what the store said, in the planner's terms (a
  /// `store-answer`). An error is an unknown outcome: the request may have
  /// been carried out.
  async delete(uri, ifMatch) {
    const { bucket, key } = parseS3(uri);
    try {
      const r = await this.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key, IfMatch: ifMatch }));
      return { tag: 'deleted', val: r.DeleteMarker ? r.VersionId : undefined };
    } catch (e) {
      const status = e.$metadata?.httpStatusCode;
      if (status === 412 || e.name === 'PreconditionFailed') return { tag: 'changed' };
      if (status === 404 && e.name !== 'NoSuchBucket') return { tag: 'absent' };
      if (status !== undefined && status >= 400 && status < 500 && ![408, 429].includes(status)) {
        return { tag: 'failed', val: `DELETE ${uri}: ${e.name}: ${e.message}` };
      }
      return { tag: 'unknown', val: `DELETE ${uri}: ${e.name}: ${e.message}` };
    }
  }
}
