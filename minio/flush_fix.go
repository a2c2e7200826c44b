// cdclab adds this file to MinIO's cmd package before it builds MinIO (scripts/bootstrap.sh,
// spark/Dockerfile). Since commit 52eee5a2f (minio/minio#21651) every S3 answer goes
// through trackingResponseWriter, which has no Flush: a streamed answer then never leaves
// the server's buffer, and ListenBucketNotification (the watcher's S3 events,
// lambda_shim/bucket_events.py) sends neither headers nor events. The method forwards the
// flush, as the forks that fixed it do (chainguard-forks/minio#37).
package cmd

import "net/http"

func (w *trackingResponseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
