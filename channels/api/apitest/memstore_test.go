package apitest_test

import (
	"testing"

	"github.com/switchboard-gw/switchboard/channels/api"
	"github.com/switchboard-gw/switchboard/channels/api/apitest"
)

func TestMemStoreContract(t *testing.T) {
	apitest.Contract(t, func(t *testing.T) api.Store { return apitest.NewMemStore() })
}
