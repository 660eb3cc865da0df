package daemon

import (
	"fmt"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"

	"github.com/resyncd/resyncd/config"
)

// NewLogger builds the logger the configuration asks for, writing to
// standard error, and sends client-go's own log lines (leader election,
// the event broadcaster) to it.
func NewLogger(c config.Log) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(c.Level)
	if err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	zc := zap.NewProductionConfig()
	zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	zc.EncoderConfig.EncodeDuration = zapcore.StringDurationEncoder
	if c.Format == "console" {
		zc = zap.NewDevelopmentConfig()
		zc.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		zc.EncoderConfig.EncodeDuration = zapcore.StringDurationEncoder
		zc.DisableStacktrace = true
	}
	zc.Level = zap.NewAtomicLevelAt(level)
	zc.Sampling = nil // one line per pass: nothing to sample, and nothing may be lost
	log, err := zc.Build()
	if err != nil {
		return nil, err
	}
	// client-go logs through klog (leader election, the event broadcaster):
	// send it to the same logger, in the same format.
	// No stack traces: client-go logs refusals it copes with (an Event in
	// a namespace being deleted) at error level, and one line says it.
	klog.SetLogger(zapr.NewLogger(log.Named("client-go").WithOptions(zap.AddStacktrace(zapcore.FatalLevel))))
	return log, nil
}
