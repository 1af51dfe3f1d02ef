package adaptation

import (
	"context"
	"os"
	"path/filepath"

	"github.com/nrikit/nrikit/record/runtimerec"
)

// RecordPath returns the recording configuration of the plugin
// configuration directory configDir: runtimerec.FileName (record.yaml)
// beside the policy file (/etc/nri/conf.d: /etc/nri/record.yaml). While
// the file exists when the runtime starts, the runtime records its NRI
// traffic with each plugin's answers (nrikit's docs/record.md): the
// file is the YAML of nrikit's record.Config, such as
//
//	path: /var/lib/nri-record/runtime.nrirec
//	keepAnnotations: ["gpu-env.nrikit.dev/*"]
//
// and must be trusted as the policy file is.
func RecordPath(configDir string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(configDir)), runtimerec.FileName)
}

// startRecording starts the recording RecordPath(configDir) asks for; nil
// if none. A configuration that cannot be used is logged and nothing is
// recorded: a recording never stops the runtime.
func startRecording(configDir string) *runtimerec.Recording {
	host, _ := os.Hostname()
	rec, err := runtimerec.LoadFile(RecordPath(configDir), host, logger())
	if err != nil {
		logger().Error("NRI: not recording", "error", err)
		return nil
	}
	if rec != nil {
		logger().Info("NRI: recording the runtime's NRI traffic", "configuration", RecordPath(configDir))
	}
	return rec
}

// stopRecording closes the recording, if any, within ctx.
func (r *Adaptation) stopRecording(ctx context.Context) {
	if r.rec == nil {
		return
	}
	if err := r.rec.Close(ctx); err != nil {
		logger().Warn("NRI: closing the recording", "error", err)
	}
}
