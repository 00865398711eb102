//go:build tools

// Keeps the UI server's module in go.mod (go.mod's header says why).
package tools

import _ "github.com/temporalio/ui-server/v2/cmd/server"
