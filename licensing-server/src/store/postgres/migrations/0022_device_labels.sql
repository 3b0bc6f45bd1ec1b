-- What clients call their devices: a name people recognise (such as the host name) and the
-- platform, each as last sent, beside the device's record. The hardware identifier stays the
-- key. Found by name from the dashboard's search (a team's devices, through their licenses).

ALTER TABLE hwids ADD COLUMN name text, ADD COLUMN platform text;
